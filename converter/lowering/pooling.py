"""ONNX pooling -> ncnn Pooling (+ Padding / Reshape where ncnn's rules differ).

ncnn's pad_mode: 0 pads the tail so the last window fits (ceil), counting
neither pads nor tail in averages when count_include_pad=0; 1 uses the given
pads only; 2/3 compute SAME_UPPER/SAME_LOWER padding at run time and always
count it in averages. With known spatial sizes every case becomes pad_mode 1
with explicit pads (the ceil tail added to the end pads). onnxruntime never
counts the ceil tail in an average, even with count_include_pad=1, while
ncnn divides by the whole kernel: there the pads are made real zeros with a
Padding layer and the pooling excludes only the tail.
"""
from __future__ import annotations

import math

from ..ir import Graph, Node
from . import lowers
from .common import (
    as_2d,
    fail,
    layer,
    new_tensor,
    pool_window,
    reshape_to,
    same_pads,
    spatial_input,
    wrap_1d,
)
from .conv3d import global_pool3d, pool3d

MAX, AVG = 0, 1


@lowers("MaxPool", "AveragePool")
def pool(graph: Graph, node: Node) -> list[Node]:
    if graph.tensors[node.inputs[0]].rank == 5:
        return pool3d(graph, node)
    shape, nspatial = spatial_input(graph, node, ranks=(3, 4, 5))
    kernel, geo, avg, include_pad = pool_window(graph, node, nspatial)
    out = graph.tensors[node.outputs[0]]
    g = {"kernel": as_2d(nspatial, kernel, 1), "stride": as_2d(nspatial, geo["strides"], 1),
         "begin": as_2d(nspatial, geo["begin"], 0), "end": as_2d(nspatial, geo["end"], 0),
         "size": as_2d(nspatial, list(shape[2:]), 1), "out": as_2d(nspatial, list(out.shape[2:]), 1)}
    if all(s is not None for s in g["size"]):
        pre_pad, params = _static(graph, node, g, geo["auto_pad"], avg, include_pad)
    else:
        pre_pad, params = _dynamic(graph, node, g, geo["auto_pad"], avg, include_pad)
    params.update({0: AVG if avg else MAX, 1: g["kernel"][1], 11: g["kernel"][0],
                   2: g["stride"][1], 12: g["stride"][0]})

    def make(x: str, y: str) -> list[Node]:
        nodes = []
        if pre_pad is not None:
            t, b, l, r = pre_pad
            xs = graph.tensors[x].shape
            padded = new_tensor(graph, f"{x}_padded", (*xs[:2], *(None if n is None else n + p + q for
                                n, p, q in zip(xs[2:], (t, l), (b, r)))), 0)
            nodes.append(layer(node, graph, "Padding", [x], [padded], {0: t, 1: b, 2: l, 3: r},
                               suffix="_pad"))
            x = padded
        return nodes + [layer(node, graph, "Pooling", [x], [y], params)]
    if nspatial == 1:
        return wrap_1d(graph, node, make, shape[1], out.shape[2])
    return make(node.inputs[0], out.name)


def _pads(begin, end) -> dict[int, int]:
    return {13: begin[0], 3: begin[1], 15: end[0], 14: end[1]}


def _static(graph, node, g, auto_pad, avg, include_pad):
    """Known sizes: pad_mode 1 with explicit pads, the ceil tail added to the end pads."""
    begin, end, tail = list(g["begin"]), list(g["end"]), [0, 0]
    for i, (n, k, s) in enumerate(zip(g["size"], g["kernel"], g["stride"])):
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            begin[i], end[i] = same_pads(n, k, s, auto_pad)
            count = math.ceil(n / s)
        elif node.attrs["ceil_mode"]:
            count = math.ceil((n + begin[i] + end[i] - k) / s) + 1
            if (count - 1) * s >= n + begin[i]:
                raise fail(node, graph, f"ceil_mode: the last window on spatial axis {i} would start in "
                                        "the end padding; onnxruntime drops it, ONNX shape inference "
                                        "keeps it, so the output size is ambiguous")
            tail[i] = (count - 1) * s + k - (n + begin[i] + end[i])
        else:
            count = (n + begin[i] + end[i] - k) // s + 1
        if g["out"][i] is not None and g["out"][i] != count:
            raise fail(node, graph, f"computed output extent {count} on spatial axis {i}, shape "
                                    f"inference says {g['out'][i]}")
    params = {5: 1, 6: int(include_pad)}
    if include_pad and any(tail):
        # the pads count, the tail does not: make the pads real zeros, exclude only the tail
        pre_pad = (begin[0], end[0], begin[1], end[1]) if any(begin + end) else None
        params.update(_pads([0, 0], tail))
        params[6] = 0
        return pre_pad, params
    params.update(_pads(begin, [e + t for e, t in zip(end, tail)]))
    return None, params


def _dynamic(graph, node, g, auto_pad, avg, include_pad):
    """Unknown sizes: ncnn's run-time pad modes, where they agree with onnxruntime."""
    k, s, begin, end = g["kernel"], g["stride"], g["begin"], g["end"]
    hint = "; give the input shape with --input-shape"
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        if any(ki < si for ki, si in zip(k, s)):
            raise fail(node, graph, f"auto_pad {auto_pad} with kernel {k} smaller than stride {s} "
                                    f"needs known spatial sizes{hint}")
        if avg and not include_pad:
            raise fail(node, graph, f"auto_pad {auto_pad} with count_include_pad=0: ncnn's run-time "
                                    f"SAME padding always counts the pads{hint}")
        return None, {5: 2 if auto_pad == "SAME_UPPER" else 3, 6: int(include_pad)}
    if not node.attrs["ceil_mode"]:
        return None, {5: 1, 6: int(include_pad), **_pads(begin, end)}
    if any(e + si > ki for e, si, ki in zip(end, s, k)):
        raise fail(node, graph, f"ceil_mode with end pads {end}, strides {s}, kernel {k}: a window may "
                                f"start in the end padding, which onnxruntime drops{hint}")
    if include_pad:
        pre_pad = (begin[0], end[0], begin[1], end[1]) if any(begin + end) else None
        return pre_pad, {5: 0, 6: 0}
    return None, {5: 0, 6: 0, **_pads(begin, end)}


@lowers("GlobalAveragePool", "GlobalMaxPool")
def global_pool(graph: Graph, node: Node) -> list[Node]:
    if graph.tensors[node.inputs[0]].rank == 5:
        return global_pool3d(graph, node)
    shape, nspatial = spatial_input(graph, node, ranks=(3, 4, 5))
    x, out = node.inputs[0], node.outputs[0]
    nodes = []
    if nspatial == 1:       # ncnn pools channels of a 3-D blob: (C, L) -> (C, 1, L)
        pre, x = reshape_to(graph, node, x, (1, shape[1], 1, shape[2]), 0, keep_w=True, suffix="_to2d")
        nodes.append(pre)
    # ncnn's global pooling gives a 1-D [C]; the ONNX result keeps its unit spatial axes
    pooled = new_tensor(graph, f"{out}_pooled", (1, shape[1]), 0)
    nodes.append(layer(node, graph, "Pooling", [x], [pooled],
                       {0: AVG if node.op == "GlobalAveragePool" else MAX, 4: 1}))
    nodes.append(reshape_to(graph, node, pooled, None, None, out=out)[0])
    return nodes
