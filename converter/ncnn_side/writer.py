"""Format an ncnn Graph as .param text and .bin bytes; write them whole or not at all."""
from __future__ import annotations

import errno
import os
import re
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from converter.ir import Graph, Node
from converter.ncnn_side.layers import FLOAT, FLOATS, FP16_FLAG, INT, INT8_FLAG, INTS, SPECS, STR

MAGIC = 7767517
_UNSAFE = re.compile(r"[^A-Za-z0-9_.:/\-]")
_MAX_NAME = 255
# ncnn before 20261020 reads the digits after a float's '.' into a 32-bit count (paramdict.cpp
# vstr_to_float): with more than 9 it overflows and reads another value (0.0075732437 was off by 0.046)
MAX_FRACTION_DIGITS = 9


def _unique_safe_names(originals: list[str]) -> dict[str, str]:
    names: dict[str, str] = {}
    taken: set[str] = set()
    for original in originals:
        if original in names:
            continue
        safe = _UNSAFE.sub("_", original)[:_MAX_NAME - 8] or "_"
        candidate, k = safe, 1
        while candidate in taken:
            candidate, k = f"{safe}_{k}", k + 1
        names[original] = candidate
        taken.add(candidate)
    return names


@dataclass
class NcnnNames:
    """ncnn-safe unique names (no whitespace, <= 255 chars); blobs and layers are separate namespaces."""
    blob: dict[str, str]
    layer: dict[str, str]


def ncnn_names(graph: Graph) -> NcnnNames:
    nodes = graph.topological()
    # graph inputs/outputs first, so they keep their ONNX names whenever those are safe
    tensors = [*graph.inputs, *graph.outputs] + [t for n in nodes for t in n.outputs]
    return NcnnNames(_unique_safe_names(tensors), _unique_safe_names([n.name for n in nodes]))


def format_float(value: float) -> str:
    """A float ncnn parses as float: contains '.' or 'e' and fits its 15-char scan."""
    value = float(np.float32(value))
    if np.isnan(value):
        raise ValueError("ncnn params cannot hold NaN")
    if np.isinf(value):      # ncnn reads "inf" as a string; the largest float is what ncnn's defaults use
        value = float(np.copysign(np.finfo(np.float32).max, value))
    text = format(value, ".9g")
    if "e" not in text and len(text.partition(".")[2]) > MAX_FRACTION_DIGITS:
        text = format(value, ".8e")     # 0.0075732437 -> 7.57324370e-03: the same 9 digits
    return text if ("." in text or "e" in text) else text + ".0"


def _format_param(pid: int, kind: str, value) -> str:
    if kind == INT:
        return f"{pid}={int(value)}"
    if kind == FLOAT:
        return f"{pid}={format_float(value)}"
    if kind in (INTS, FLOATS):
        fmt = (lambda v: str(int(v))) if kind == INTS else format_float
        return f"{-23300 - pid}={len(value)}" + "".join("," + fmt(v) for v in value)
    if kind == STR:
        return f'{pid}="{value}"'
    raise ValueError(kind)


def _kind(spec, pid: int, value) -> str:
    """The declared kind, or for ids the spec does not know (kept from read files) the value's own."""
    if pid in spec.by_id:
        return spec.by_id[pid].kind
    if isinstance(value, str):
        return STR
    if isinstance(value, (tuple, list)):
        return FLOATS if any(isinstance(v, float) for v in value) else INTS
    return FLOAT if isinstance(value, float) else INT


def layer_line(node: Node, names: NcnnNames) -> str:
    spec = SPECS[node.op]
    fields = [node.op.ljust(16), names.layer[node.name].ljust(24), str(len(node.inputs)), str(len(node.outputs))]
    fields += [names.blob[t] for t in node.inputs + node.outputs]
    for pid in sorted(node.params):
        fields.append(_format_param(pid, _kind(spec, pid, node.params[pid]), node.params[pid]))
    return " ".join(fields)


def param_text(graph: Graph, names: NcnnNames | None = None) -> str:
    names = names or ncnn_names(graph)
    nodes = graph.topological()
    blobs = {t for n in nodes for t in n.outputs}
    lines = [str(MAGIC), f"{len(nodes)} {len(blobs)}"]
    lines += [layer_line(n, names) for n in nodes]
    return "\n".join(lines) + "\n"


def weight_bytes(node: Node, fp16: bool = False) -> bytes:
    """The node's weights in .bin layout: flagged buffers get a type tag; all 32-bit aligned."""
    return b"".join(weight_chunks(node, fp16))


def weight_chunks(node: Node, fp16: bool = False):
    """weight_bytes in pieces, each weight as views of its array (or, where its array is not laid out
    as the .bin wants, e.g. a MatMul weight read transposed, as copies of PIECE bytes at most): a big
    model's .bin is written without a second copy of its weights in memory (light_vgg19: 575 MB of
    them; a 0.5B decoder's lm_head: 544 MB)."""
    layout = SPECS[node.op].weight_layout(node.params)
    if len(layout) != len(node.weights):
        raise ValueError(f"{node.op} '{node.name}' has {len(node.weights)} weights, spec wants {len(layout)}")
    params = SPECS[node.op].resolve(node.params)
    for spec, data in zip(layout, node.weights):
        tagged = spec.tagged(params)
        data = np.asarray(data)
        # quantized weights stay int8; an untagged "i1" buffer is raw bytes (Gemm's packed B)
        int8 = (tagged and data.dtype == np.int8) or spec.raw == "i1"
        if data.size != spec.count(params):
            raise ValueError(f"{node.op} '{node.name}' weight {spec.name} has {data.size} values")
        if tagged:
            yield struct.pack("<I", INT8_FLAG if int8 else FP16_FLAG if fp16 else 0)
        pieces = c_order_pieces(data, np.int8 if int8 else "<f4")
        if tagged and fp16 and not int8:
            yield from (memoryview(np.frombuffer(p, "<f4").astype("<f2")).cast("B") for p in pieces)
            pad = data.size % 2 * 2
        else:
            yield from pieces
            pad = -data.size % 4 if int8 else 0
        if pad:
            yield b"\0" * pad


PIECE = 1 << 24     # bytes: a weight laid out otherwise is copied a piece at a time


def c_order_pieces(data: np.ndarray, dtype):
    """`data`'s values in C order as `dtype`, as byte views: the array itself where it already is so,
    else copies of leading-axis slices of about PIECE bytes, one at a time (concatenated, the same bytes)."""
    data = np.asarray(data)
    if data.size == 0 or data.ndim < 2 or (data.dtype == np.dtype(dtype) and data.flags.c_contiguous):
        yield memoryview(np.ascontiguousarray(data, dtype).ravel()).cast("B")
        return
    step = max(1, PIECE // data[0].nbytes)
    for r in range(0, len(data), step):
        yield memoryview(np.ascontiguousarray(data[r:r + step], dtype).ravel()).cast("B")


def bin_bytes(graph: Graph, fp16: bool = False) -> bytes:
    return b"".join(bin_chunks(graph, fp16))


def bin_chunks(graph: Graph, fp16: bool = False):
    return (chunk for n in graph.topological() for chunk in weight_chunks(n, fp16))


def _new_file_mode() -> int:
    """The mode open() would give a new file under the user's umask (mkstemp's is 0600)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def write_atomically(files: dict) -> None:
    """Write all files or none: each goes to a temp file first, renamed once all are written.
    A file's data is bytes or an iterable of bytes-like chunks."""
    temps: list[tuple[str, Path]] = []
    mode = _new_file_mode()
    for path in files:      # a rename onto a folder fails only after the files before it were renamed
        if path.is_dir():
            raise IsADirectoryError(errno.EISDIR, "is a folder, not a file", str(path))
    try:
        for path, data in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
            temps.append((tmp, path))
            os.fchmod(fd, mode)
            with os.fdopen(fd, "wb") as f:
                for chunk in [data] if isinstance(data, (bytes, bytearray)) else data:
                    f.write(chunk)
        for tmp, path in temps:
            os.replace(tmp, path)
    finally:
        for tmp, _ in temps:
            if os.path.exists(tmp):
                os.unlink(tmp)


def save(graph: Graph, param_path: str | Path, bin_path: str | Path, fp16: bool = False,
         extra: dict[Path, bytes] | None = None) -> NcnnNames:
    """Write .param and .bin (and `extra` files beside them, all or none); returns the names used."""
    names = ncnn_names(graph)
    write_atomically({Path(param_path): param_text(graph, names).encode(),
                      Path(bin_path): bin_chunks(graph, fp16), **{Path(p): d for p, d in (extra or {}).items()}})
    return names
