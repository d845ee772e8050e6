"""Fuse rotary position embedding written out in ONNX ops into one ncnn RotaryEmbed layer, as torch
exports Hugging Face's apply_rotary_pos_emb (Llama, Qwen, Gemma, Mistral, SmolLM; Phi on its rotated
slice):

    out = x * cos + Concat(-x[..., h:], x[..., :h], axis=-1) * sin        x (1, H, T, 2h), cos/sin (1, 1, T, 2h)

(operands of the Add and Muls in either order). ncnn's RotaryEmbed (0=interleaved 0) computes
out[:h] = x[:h] c - x[h:] s, out[h:] = x[:h] s + x[h:] c from a (T, h) cos and sin cache: the same
numbers exactly when cos and sin repeat one half twice along the last axis. That is checked: a
constant cache by its values, a computed one by its producers (HF's emb = cat(freqs, freqs) then
Cos/Sin, scalar scales, casts and unsqueezes that leave the last axis alone). Their first halves,
as (1, T, h), become the layer's cache blobs (one Slice and Reshape per cache, shared by every
layer that reads it). x of other ranks or layouts, a cos that varies over heads, or a cache not
proven to repeat its halves leave the nodes alone. One walk over the Neg nodes.
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node, Tensor
from converter.op_groups import UNARY_ELEMENTWISE
from converter.shapes.symbolic import SLICE_TERMS

from converter.rewrite.patterns import other, scalar, sole_reader, unsqueezed_last

_SCALAR_OPS = {"Mul", "Div", "Add", "Sub"}


def _slice_of(graph: Graph, name: str) -> tuple[str, int, int] | None:
    """(data, start, end) of a Slice along the last axis with constant bounds and step 1."""
    node = graph.producer(name)
    if node is None or node.op != "Slice" or node.ncnn:
        return None
    x = graph.tensors[node.inputs[0]]
    terms = node.meta.get(SLICE_TERMS)     # express_shapes' form: bounds computed from extents
    if terms is not None:
        starts, ends, axes = terms["starts"], terms["ends"], terms["axes"]
        if len(axes) != 1 or x.rank is None or axes[0] % x.rank != x.rank - 1 or x.shape[-1] is None \
                or not isinstance(starts[0], int) or not isinstance(ends[0], int):
            return None
        return node.inputs[0], starts[0], min(ends[0], x.shape[-1])
    if len(node.inputs) < 3:
        return None
    values = [graph.value(i) if i else None for i in node.inputs[1:5]]
    if x.rank is None or values[0] is None or values[1] is None or values[0].size != 1:
        return None
    axis = int(values[2].reshape(-1)[0]) if len(values) > 2 and values[2] is not None else 0
    step = int(values[3].reshape(-1)[0]) if len(values) > 3 and values[3] is not None else 1
    if axis % x.rank != x.rank - 1 or step != 1 or x.shape[-1] is None:
        return None
    start, end = int(values[0].reshape(-1)[0]), int(values[1].reshape(-1)[0])
    return node.inputs[0], start, min(end, x.shape[-1])


def _halves_repeat(graph: Graph, name: str, width: int) -> bool:
    """The tensor's last axis (of `width`) is one half written twice."""
    value = graph.value(name)
    while value is None:
        node = graph.producer(name)
        if node is None or node.ncnn:
            return False
        if node.op == "Concat" and len(node.inputs) == 2 and node.inputs[0] == node.inputs[1] \
                and node.attrs.get("axis") % max(graph.tensors[name].rank, 1) == graph.tensors[name].rank - 1:
            return graph.tensors[node.inputs[0]].shape[-1] == width // 2
        if node.op in UNARY_ELEMENTWISE or node.op == "Cos" or node.op == "Sin":
            name = node.inputs[0]
        elif node.op in _SCALAR_OPS and len(node.inputs) == 2 and any(
                scalar(graph, i) is not None for i in node.inputs):
            name = next(i for i in node.inputs if scalar(graph, i) is None)
        elif node.op in ("Unsqueeze", "Squeeze") and graph.tensors[node.inputs[0]].shape is not None:
            src = graph.tensors[node.inputs[0]]
            if not src.shape or src.shape[-1] != width:
                return False
            name = node.inputs[0]
        else:
            return False
        t = graph.tensors[name]
        if t.shape is None or not t.shape or t.shape[-1] != width:
            return False
        value = graph.value(name)
    return value.shape[-1] == width and np.array_equal(value[..., :width // 2], value[..., width // 2:])


def _match(graph: Graph, neg: Node):
    """(x, cos, sin, nodes, out) around one Neg of the rotated half."""
    x2 = _slice_of(graph, neg.inputs[0])
    concat = sole_reader(graph, neg.outputs[0], "Concat")
    if x2 is None or concat is None or len(concat.inputs) != 2 or concat.inputs[0] != neg.outputs[0]:
        return None
    x1 = _slice_of(graph, concat.inputs[1])
    x = graph.tensors[x2[0]]
    if x1 is None or x1[0] != x2[0] or x.rank != 4 or x.batch_axis != 0 or x.shape[-1] is None \
            or x.shape[-1] % 2 or x.dtype != np.float32:
        return None
    h = x.shape[-1] // 2
    if (x1[1], x1[2]) != (0, h) or (x2[1], x2[2]) != (h, 2 * h):
        return None
    rotated_mul = sole_reader(graph, concat.outputs[0], "Mul")
    sin = None if rotated_mul is None else other(rotated_mul, concat.outputs[0])
    add = None if rotated_mul is None else sole_reader(graph, rotated_mul.outputs[0], "Add")
    straight = None if add is None else graph.producer(other(add, rotated_mul.outputs[0]) or "")
    if straight is None or straight.op != "Mul" or straight.ncnn or x.name not in straight.inputs:
        return None
    cos = other(straight, x.name)
    for cache in (cos, sin):
        shape = graph.tensors[cache].shape
        if shape is None or len(shape) != 4 or shape[:2] != (1, 1) or shape[3] != 2 * h \
                or graph.tensors[cache].dtype != np.float32 or not _halves_repeat(graph, cache, 2 * h):
            return None
    out = graph.tensors[add.outputs[0]]
    if out.shape is None or out.rank != 4:
        return None
    slices = [graph.producer(concat.inputs[1]), graph.producer(neg.inputs[0])]
    nodes = [n for n in slices if graph.use_count(n.outputs[0]) == 1] + [neg, concat, rotated_mul, straight, add]
    if graph.use_count(straight.outputs[0]) != 1:
        return None
    return x.name, cos, sin, nodes, add.outputs[0]


def _half_cache(graph: Graph, cache: str, h: int, made: dict, step: int = 1) -> str:
    """cache (1, 1, T, 2h) -> its first half as (1, T, h): ncnn's 2-D (T, h) cache blob; with step 2
    (each value twice in a row) cache[..., 0::2], the cache ncnn's interleaved RotaryEmbed reads."""
    key = (cache, step)
    if key not in made:
        t = graph.tensors[cache]
        half = graph.add_tensor(Tensor(graph.fresh_name(f"{cache}_half"), (1, 1, t.shape[2], h),
                                       np.dtype(np.float32), batch_axis=0)).name
        bounds = (("start", [0]), ("end", [step * h]), ("axis", [3])) + ((("step", [step]),) if step != 1 else ())
        consts = [graph.add_constant(f"{cache}_{k}", np.array(v, np.int64)).name for k, v in bounds]
        graph.add_node(Node(graph.fresh_name(f"{cache}_half"), "Slice", [cache, *consts], [half]))
        rows = graph.add_tensor(Tensor(graph.fresh_name(f"{cache}_rows"), (1, t.shape[2], h),
                                       np.dtype(np.float32), batch_axis=0)).name
        target = graph.add_constant(f"{cache}_rows_shape", np.array([1, -1, h], np.int64)).name
        graph.add_node(Node(graph.fresh_name(f"{cache}_rows"), "Reshape", [half, target], [rows]))
        made[key] = rows
    return made[key]


def _every_other(graph: Graph, name: str) -> tuple[str, int] | None:
    """(data, start) of x[..., start::2] along the last axis (constant bounds, to the end)."""
    node = graph.producer(name)
    if node is None or node.op != "Slice" or node.ncnn or len(node.inputs) != 5 or SLICE_TERMS in node.meta:
        return None
    x = graph.tensors[node.inputs[0]]
    starts, ends, axes, steps = (graph.value(i) for i in node.inputs[1:])
    if x.rank is None or x.shape[-1] is None or any(v is None or v.size != 1 for v in (starts, ends, axes, steps)):
        return None
    if int(axes.reshape(-1)[0]) % x.rank != x.rank - 1 or int(steps.reshape(-1)[0]) != 2 \
            or int(ends.reshape(-1)[0]) < x.shape[-1] or int(starts.reshape(-1)[0]) not in (0, 1):
        return None
    return node.inputs[0], int(starts.reshape(-1)[0])


def _pairs_repeat(graph: Graph, name: str, width: int) -> bool:
    """The tensor's last axis (of `width`) holds each value twice in a row (repeat_interleave(f, 2)):
    a constant by its values, else through elementwise steps to Reshape(Expand(f[..., None], (.., 2)))."""
    while graph.value(name) is None:
        node = graph.producer(name)
        if node is None or node.ncnn:
            return False
        if node.op == "Reshape":
            expand = graph.producer(node.inputs[0])
            pairs = None if expand is None or expand.op != "Expand" else graph.tensors[expand.outputs[0]].shape
            return pairs is not None and tuple(pairs[-2:]) == (width // 2, 2) \
                and unsqueezed_last(graph, expand.inputs[0]) is not None
        if node.op in UNARY_ELEMENTWISE or node.op in ("Cos", "Sin", "Unsqueeze", "Squeeze"):
            name = node.inputs[0]
        elif node.op in _SCALAR_OPS and len(node.inputs) == 2 and any(scalar(graph, i) is not None for i in node.inputs):
            name = next(i for i in node.inputs if scalar(graph, i) is None)
        else:
            return False
        shape = graph.tensors[name].shape
        if not shape or shape[-1] != width:
            return False
    value = graph.value(name)
    return value.shape[-1] == width and np.array_equal(value[..., 0::2], value[..., 1::2])


def _match_interleaved(graph: Graph, neg: Node):
    """(x, cos, sin, nodes, out) of Cohere's / GLM's rotary: x * cos + flatten(stack(-x[..., 1::2],
    x[..., 0::2])) * sin, cos and sin each frequency twice in a row: ncnn's interleaved RotaryEmbed."""
    x2 = _every_other(graph, neg.inputs[0])
    lifted = sole_reader(graph, neg.outputs[0], "Unsqueeze")
    concat = None if lifted is None else sole_reader(graph, lifted.outputs[0], "Concat")
    if x2 is None or x2[1] != 1 or concat is None or unsqueezed_last(graph, lifted.outputs[0]) != neg.outputs[0] \
            or len(concat.inputs) != 2 or concat.inputs[0] != lifted.outputs[0] \
            or concat.attrs.get("axis") % 5 != 4 or graph.use_count(concat.inputs[1]) != 1:
        return None
    x1 = _every_other(graph, unsqueezed_last(graph, concat.inputs[1]) or "")
    x = graph.tensors[x2[0]]
    if x1 != (x2[0], 0) or x.rank != 4 or x.batch_axis != 0 or x.shape[-1] is None or x.shape[-1] % 2 \
            or x.dtype != np.float32:
        return None
    flat = sole_reader(graph, concat.outputs[0], "Reshape")
    shape = None if flat is None else graph.tensors[flat.outputs[0]].shape
    if shape is None or len(shape) != 4 or (shape[1], shape[3]) != (x.shape[1], x.shape[3]) or x.shape[1] is None:
        return None
    rotated_mul = sole_reader(graph, flat.outputs[0], "Mul")
    sin = None if rotated_mul is None else other(rotated_mul, flat.outputs[0])
    add = None if rotated_mul is None else sole_reader(graph, rotated_mul.outputs[0], "Add")
    straight = None if add is None else graph.producer(other(add, rotated_mul.outputs[0]) or "")
    if straight is None or straight.op != "Mul" or straight.ncnn or x.name not in straight.inputs \
            or graph.use_count(straight.outputs[0]) != 1:
        return None
    cos, width = other(straight, x.name), x.shape[-1]
    for cache in (cos, sin):
        t = graph.tensors[cache]
        if t.shape is None or len(t.shape) != 4 or t.shape[:2] != (1, 1) or t.shape[3] != width \
                or t.dtype != np.float32 or not _pairs_repeat(graph, cache, width):
            return None
    lifts = [lifted, graph.producer(concat.inputs[1])]
    slices = [graph.producer(neg.inputs[0]), graph.producer(lifts[1].inputs[0])]
    nodes = [n for n in slices if graph.use_count(n.outputs[0]) == 1] + [neg, *lifts, concat, flat, rotated_mul,
                                                                          straight, add]
    return x.name, cos, sin, nodes, add.outputs[0]


def fuse_rotary_embed(graph: Graph) -> dict:
    fused, made = 0, {}
    for neg in graph.onnx_nodes_of("Neg"):
        found, interleaved = _match(graph, neg), 0
        if found is None:
            found, interleaved = _match_interleaved(graph, neg), 1
        if found is None:
            continue
        x, cos, sin, nodes, out = found
        h = graph.tensors[x].shape[-1] // 2
        caches = [_half_cache(graph, c, h, made, 1 + interleaved) for c in (cos, sin)]
        for node in nodes:
            graph.remove_node(node)
        graph.add_node(Node(graph.fresh_name(f"{neg.name}_rope"), "RotaryEmbed", [x, *caches], [out],
                            params={0: interleaved}, ncnn=True, origin=neg.origin or neg.name))
        fused += 1
    if fused:
        graph.remove_unused_tensors()
    return {"rotary_fused": fused}
