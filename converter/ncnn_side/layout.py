"""Arrays between the ONNX layout a user feeds and reads and the ncnn layout the runtime takes.

ncnn has no batch axis and at most 4 axes: an ONNX input (1, 3, H, W) is the ncnn Mat (3, H, W),
and a tensor whose axes were merged to fit is reshaped. The conversion records this per graph
input and output (NcnnModel.io(): ONNX shape, ncnn shape, batch axis, dtype); convert writes
that record beside the .param as `<stem>.json` (the io sidecar), so that files read back later
take and give ONNX-shaped arrays too. An input whose layout change moved onto it (convert
--nchw-input) also records `onnx_to_ncnn_perm`: ncnn's input, batch axis included, is the ONNX
array transposed by it (an NHWC image: [0, 3, 1, 2]); records without that key take no transposition. Files without one (pnnx's, or older ones) only have their
Input layers' declared extents: a feed of one more axis, leading extent 1, is taken as batched.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

LAYOUTS = ("onnx", "ncnn")
# /2: some input carries PERM_KEY. A reader of /1 alone ignores the record (a stale or foreign one)
# and takes ncnn-layout arrays, where reading it without the key would transpose nothing: an NHWC
# feed taken as is. Records without the key stay /1, which every reader takes.
SIDECAR_FORMAT, SIDECAR_FORMAT_PERM = "onnx2ncnn-io/1", "onnx2ncnn-io/2"
PERM_KEY = "onnx_to_ncnn_perm"      # an input's ONNX axes in ncnn's order (batch axis included)


class LayoutError(ValueError):
    """An array that fits neither the ONNX nor the ncnn shape of its input; one line."""


def _fits(shape: tuple, declared: list) -> bool:
    return len(shape) == len(declared) and all(d is None or d == s for d, s in zip(declared, shape))


def _merged(entry: dict) -> bool:
    """Axes were merged to fit ncnn (more than the batch axis differs between the two shapes)."""
    onnx_rank = len(entry["onnx_shape"])
    return len(entry["ncnn_shape"]) != onnx_rank - (entry["batch_axis"] is not None) and onnx_rank > 0


def _fill(shape: list, size: int) -> list[int] | None:
    """`shape` with its one unknown extent solved from the element count; None if ambiguous."""
    unknown = [i for i, d in enumerate(shape) if d is None]
    if len(unknown) > 1:
        return None
    return [-1 if d is None else d for d in shape]


def to_ncnn(array, entry: dict, layout: str = "onnx") -> np.ndarray:
    """A user's array for the input `entry` (an io() record) as ncnn takes it: batch axis
    dropped, merged axes reshaped, in the dtype ncnn reads (float32, or int32 word ids)."""
    array = np.asarray(array)
    dtype = entry.get("dtype")
    onnx_shape, ncnn_shape = entry.get("onnx_shape"), entry.get("ncnn_shape")
    if layout == "ncnn" or onnx_shape is None:
        return array
    if entry.get("inferred") and _fits(array.shape, ncnn_shape):
        return array        # bare files: the declared ncnn rank is taken as ncnn layout
    name = entry.get("onnx") or entry.get("ncnn")
    if not _fits(array.shape, onnx_shape):
        hint = ("; it has the ncnn shape: pass layout='ncnn' (--layout ncnn) to feed ncnn's layout"
                if ncnn_shape is not None and _fits(array.shape, ncnn_shape) else "")
        raise LayoutError(f"input '{name}': array shape {list(array.shape)} does not fit its ONNX shape "
                          f"{['?' if d is None else d for d in onnx_shape]}{hint}")
    axis, perm = entry.get("batch_axis"), entry.get(PERM_KEY)
    if perm:        # channels-first for ncnn (passes/move_input_layout.py)
        array = np.transpose(array, perm)
        axis = None if axis is None else perm.index(axis)
    if axis is not None:
        if array.shape[axis] != 1:
            raise LayoutError(f"input '{name}': ncnn runs one item at a time, the array has "
                              f"{array.shape[axis]} on its batch axis {axis}")
        array = np.squeeze(array, axis)
    if ncnn_shape is not None and _merged(entry):
        target = _fill(ncnn_shape, array.size)
        if target is not None:
            array = array.reshape(target)
    array = np.atleast_1d(array)
    return array.astype(dtype, copy=False) if dtype else array


def held_as(array: np.ndarray, dtype: str | None) -> np.ndarray:
    """A blob ncnn returned (a Mat reads as float32) in the dtype ncnn holds it in: the int32 bits
    of an input passed through (io record's dtype, converter/shapes/int_inputs.py output_dtype) stay int32."""
    if dtype == "int32" and array.dtype == np.float32:
        return array.view(np.int32)
    return array


def to_onnx(array: np.ndarray, entry: dict) -> np.ndarray:
    """An ncnn output in the ONNX layout of `entry`: the batch axis restored, merged axes split."""
    array = held_as(array, entry.get("dtype"))
    onnx_shape = entry.get("onnx_shape")
    if onnx_shape is None:
        return array
    if _merged(entry) or not onnx_shape:
        target = _fill(onnx_shape, array.size)
        return array.reshape(target) if target is not None else array
    perm, axis = entry.get(PERM_KEY), entry.get("batch_axis")
    if perm:        # an input taken channels-first, as ncnn's Mat (no batch axis): back to the ONNX layout
        if axis is not None and array.ndim == len(onnx_shape) - 1:
            return np.transpose(np.expand_dims(array, perm.index(axis)), np.argsort(perm))
        return np.transpose(array, np.argsort(perm)) if axis is None and array.ndim == len(perm) else array
    if axis is not None and array.ndim == len(onnx_shape) - 1:
        return np.expand_dims(array, axis)
    return array


def sidecar_path(param_path: str | Path) -> Path:
    """`m.ncnn.param` -> `m.ncnn.json`."""
    return Path(param_path).with_suffix(".json")


def sidecar_bytes(io: dict) -> bytes:
    """One line per input and output, so a diff of two conversions reads entry by entry."""
    lists = {k: "[\n" + ",\n".join(f"  {json.dumps(e)}" for e in io[k]) + "\n ]" for k in ("inputs", "outputs")}
    # and the oldest ncnn release the files need (converter/ncnn_side/release_target.py), where known
    release = f',\n "ncnn_min_version": {int(io["ncnn_min_version"])}' if io.get("ncnn_min_version") else ""
    tail = f',\n "tail": {json.dumps(io["tail"])}' if "tail" in io else ""     # converter/onnx_side/host_tail.py
    tail += f',\n "pair": {json.dumps(io["pair"])}' if "pair" in io else ""    # converter/onnx_side/merged_decoder.py
    form = SIDECAR_FORMAT_PERM if any(PERM_KEY in e for e in io["inputs"]) else SIDECAR_FORMAT
    return (f'{{"format": "{form}",\n "inputs": {lists["inputs"]},\n'
            f' "outputs": {lists["outputs"]}{release}{tail}}}\n').encode()


def read_sidecar(param_path: str | Path, blobs: set[str]) -> dict | None:
    """The io record written beside these files, if there is one that is ours and names only
    blobs the .param has (a stale or foreign .json is ignored: the files stay in ncnn layout)."""
    path = sidecar_path(param_path)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("format") not in (SIDECAR_FORMAT, SIDECAR_FORMAT_PERM):
        return None
    entries = record.get("inputs", []) + record.get("outputs", [])
    if not all(isinstance(e, dict) and e.get("ncnn") in blobs for e in entries):
        return None
    release = {"ncnn_min_version": record["ncnn_min_version"]} if isinstance(record.get("ncnn_min_version"), int) else {}
    return {"inputs": record["inputs"], "outputs": record["outputs"], **release,
            **({"tail": record["tail"]} if isinstance(record.get("tail"), dict) else {})}


def declared_inputs(graph) -> dict:
    """An io record for files without a sidecar: each Input layer's declared extents (0=w 1=h
    11=d 2=c), read as an ONNX shape with a leading batch axis of 1; outputs stay as ncnn gives them."""
    inputs = []
    for node in graph.nodes.values():
        if node.op != "Input" or not node.outputs:
            continue
        extents = [node.params.get(k, 0) for k in (2, 11, 1, 0)]     # c, d, h, w
        ncnn_shape = [e for e in extents if e and e > 0]
        entry = {"onnx": node.outputs[0], "ncnn": node.outputs[0], "onnx_shape": None, "ncnn_shape": None,
                 "batch_axis": None, "dtype": None, "inferred": True}
        if ncnn_shape:
            entry.update(onnx_shape=[1, *ncnn_shape], ncnn_shape=ncnn_shape, batch_axis=0)
        inputs.append(entry)
    return {"inputs": inputs, "outputs": []}
