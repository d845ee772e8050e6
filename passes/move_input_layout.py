"""A channels-last image input whose readers begin with a Transpose to channels-first takes
channels-first instead (convert --nchw-input NAME): the Transposes go, so ncnn's Input is c,h,w
and ncnn::Mat::from_pixels can fill it; without the option such an input is named in a note.

TF/keras exports (tf2onnx) take NHWC images, [N, H, W, 3], and open with Transpose(perm 0,3,1,2).
Converted as they are, ncnn's Input is c=H, h=W, w=3 followed by a Permute, which no pixel helper
of ncnn fills. The Transpose may feed several readers, and may come after an elementwise
normalisation (Cast, x / 255, x - mean): those steps run in the new layout, their constants
transposed alike (a per-channel [3] becomes [1, 3, 1, 1]) and their outputs renamed, as the
tensors ONNX names hold the other layout. The input keeps its ONNX shape and records the
permutation (Tensor.onnx_perm): the .json record says how a user's NHWC array becomes ncnn's.
Nothing is inserted; an input read in its own layout anywhere is refused in one line, saying where.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from converter.ir import ConversionError, Graph, Node
from converter.op_groups import ELEMENTWISE

CHANNELS_FIRST = (0, 3, 1, 2)


def _perm(node: Node) -> tuple[int, ...] | None:
    perm = node.attrs.get("perm")
    return None if perm is None else tuple(int(p) for p in perm)


def plan(graph: Graph, name: str) -> tuple[list[Node], list[Node]] | str:
    """The elementwise steps and the Transposes between input `name` and its channels-first form,
    or why the layout change cannot move onto the input."""
    t = graph.tensors[name]
    if t.rank != 4:
        return f"it is {'of unknown rank' if t.rank is None else f'{t.rank}-D'}, not a 4-D image"
    if t.shape[0] not in (1, None):
        return f"its batch is {t.shape[0]}; ncnn takes one image at a time (batch 1: --input-shape {name}=1,...)"
    steps, transposes, work, seen, other = [], [], [name], set(), None
    while work:
        tensor = work.pop()
        if tensor in graph.outputs:
            other = other or f"'{tensor}' is a model output"
        for node in graph.consumers(tensor):
            if node.name in seen:
                continue
            seen.add(node.name)
            computed = {i for i in node.inputs if i and not graph.tensors[i].is_constant}
            if node.op == "Transpose" and _perm(node) == CHANNELS_FIRST and node.outputs[0] not in graph.outputs:
                transposes.append(node)
            elif node.op in ELEMENTWISE and not node.ncnn and computed == {tensor} and len(node.outputs) == 1 \
                    and graph.tensors[node.outputs[0]].rank == 4 \
                    and all(graph.tensors[i].rank <= 4 for i in node.inputs if i and i not in computed):
                steps.append(node)
                work.append(node.outputs[0])
            else:
                what = f"a Transpose by {list(_perm(node) or [])}" if node.op == "Transpose" else node.op
                other = other or f"{what} '{node.origin or node.name}' reads '{tensor}'"
    if not transposes:
        return (f"no Transpose to channels-first (perm 0,3,1,2) follows it: nothing to move"
                f"{f' ({other} as it is)' if other else ''}")
    if other:
        return (f"{other} in the input's layout, besides the Transpose to channels-first: it would need a "
                f"Permute back, which --nchw-input does not add")
    return steps, transposes


def _permuted(shape, perm) -> tuple:
    return tuple(shape[p] for p in perm)


def _move(graph: Graph, name: str, steps: list[Node], transposes: list[Node]) -> None:
    perm = CHANNELS_FIRST
    t = graph.tensors[name]
    t.onnx_shape, t.onnx_batch_axis, t.onnx_perm = t.shape, t.batch_axis, perm
    t.shape = _permuted(t.shape, perm)
    t.batch_axis = None if t.batch_axis is None else perm.index(t.batch_axis)
    graph.dim_names = {(n, perm.index(a) if n == name else a): d for (n, a), d in graph.dim_names.items()}
    for node in steps:      # consumers first found first: each step's input is already moved
        for slot, inp in enumerate(node.inputs):
            value = graph.value(inp)
            if value is not None and any(d != 1 for d in value.shape):     # a scalar broadcasts either way
                full = value.reshape((1,) * (4 - value.ndim) + value.shape)
                graph.replace_input(node, slot, graph.add_constant(f"{inp}_nchw", full.transpose(perm)).name)
        old = graph.tensors[node.outputs[0]]
        new = f"{old.name}_nchw" if f"{old.name}_nchw" not in graph.tensors else graph.fresh_name(f"{old.name}_nchw")
        graph.add_tensor(replace(old, name=new, shape=None if old.shape is None else _permuted(old.shape, perm),
                                 batch_axis=None if old.batch_axis is None else perm.index(old.batch_axis)))
        graph.rename_output(node, old.name, new)
        graph.replace_all_uses(old.name, new)
    for node in transposes:
        graph.remove_node(node)
        graph.replace_all_uses(node.outputs[0], node.inputs[0])


def hint(name: str) -> str:
    return (f"input '{name}' is channels-last (NHWC) and its readers begin with a Transpose to channels-first: "
            f"--nchw-input {name} makes the ncnn Input c,h,w (what ncnn::Mat::from_pixels fills), without the Permute")


def move_input_layout(graph: Graph) -> dict:
    unknown = sorted(set(graph.nchw_inputs) - set(graph.inputs))
    if unknown:
        raise ConversionError(f"--nchw-input {unknown[0]}: the model has no input '{unknown[0]}'; its inputs "
                              f"are {', '.join(graph.inputs) or '(none)'}")
    moved = 0
    for name in list(graph.inputs):
        if graph.tensors[name].onnx_perm is not None:       # moved already (the pass run twice)
            continue
        found = plan(graph, name)
        if name not in graph.nchw_inputs:
            if not isinstance(found, str) and hint(name) not in graph.notes:
                graph.notes.append(hint(name))
            continue
        if isinstance(found, str):
            raise ConversionError(f"--nchw-input {name}: {found}")
        _move(graph, name, *found)
        moved += 1
    if moved:
        graph.remove_unused_tensors()
    return {"input_layouts_moved": moved}
