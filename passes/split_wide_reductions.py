"""A reduction over several axes of a tensor wider than ncnn becomes one reduction per axis.

Adaptive average pooling to a size that does not divide the input (UperNet's pyramid pooling
under torch.export) gathers every window into [B, C, oh, kh, ow, kw] and means over kh and kw.
Those two axes are apart, so merge_wide_axes cannot fit the 6-axis tensor into 4; reduced one
at a time (the last first, so the other's index holds), with a Reshape to its own shape between
the steps, the first step merges what lies between them and the second meets a tensor of 4 axes. Exact for a mean (equal counts), sum, max, min
and product. Static axes only (an attribute, or a constant input).
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node, Tensor
from converter.ncnn_side.axes import MAX_NCNN_RANK
from converter.shapes.axis_boundaries import reduce_axes

SEPARABLE = {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd"}


def _split(graph: Graph, node: Node) -> bool:
    x, out = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    if x.shape is None or len(x.ncnn_shape) <= MAX_NCNN_RANK:
        return False
    axes = reduce_axes(graph, node, x)
    if axes is None or len(axes) < 2 or axes == list(range(axes[0], axes[-1] + 1)):
        return False          # adjacent axes merge into one
    keep = node.attrs.get("keepdims", 1)
    as_attr = "axes" in node.attrs
    origin = node.origin or node.name
    graph.remove_node(node)
    source, shape, batch = x.name, list(x.shape), x.batch_axis
    for k, axis in enumerate(reversed(axes)):
        last = k == len(axes) - 1
        shape = shape[:axis] + ([1] if keep else []) + shape[axis + 1:]
        batch = None if batch is None or batch == axis else batch - (not keep and batch > axis)
        target = out.name if last else graph.add_tensor(Tensor(graph.fresh_name(f"{out.name}_part"), tuple(shape),
                                                               out.dtype, batch_axis=batch)).name
        attrs = {**node.attrs, **({"axes": [axis]} if as_attr else {})}
        inputs = [source] if as_attr else [source, graph.add_constant(f"{node.name}_axis", np.array([axis], np.int64)).name]
        graph.add_node(Node(node.name if last else graph.fresh_name(f"{node.name}_part"), node.op, inputs, [target],
                            attrs, origin=origin))
        source = target
        if not last and None not in shape:     # a Reshape to its own shape lets each step group its axes its way
            source = graph.add_tensor(Tensor(graph.fresh_name(f"{target}_regrouped"), tuple(shape), out.dtype,
                                             batch_axis=batch)).name
            target_shape = graph.add_constant(f"{source}_shape", np.array(shape, np.int64)).name
            graph.add_node(Node(graph.fresh_name(f"{node.name}_between"), "Reshape", [target, target_shape], [source],
                                origin=origin))
    return True


def split_wide_reductions(graph: Graph) -> dict:
    split = 0
    for node in graph.topological():
        if node.op in SEPARABLE and not node.ncnn:
            split += _split(graph, node)
    return {"wide_reductions_split": split}
