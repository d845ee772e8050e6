"""Float tensors whose extents are known only at run time, rewritten over one building block.

Detectors build their anchor grids from the feature maps' sizes: Range(0, W, 1),
ConstantOfShape([H*W, 1], stride), Expand(x, [H, W]). When those sizes are run-time
terms (converter/shapes/symbolic.py), each becomes ONNX nodes over a ConstantOfShape whose
shape is the terms themselves (node.meta[SHAPE_TERMS], lowered in lowering/fill.py):

  Range(start, limit, delta) -> (start - delta) + delta * CumSum(ones([n]))
                                with n = ceil((limit - start) / delta)
  Expand(x, shape)           -> x * ones(shape)      (numpy's bidirectional broadcast)

The index values come out of a float32 running sum of ones, exact below 2**24.
"""
from __future__ import annotations

import numpy as np
from onnx import numpy_helper

from converter.ir import Graph, Node, Tensor
from converter.shapes.symbolic import SHAPE_TERMS, Term, known_value, op, pin_refs

FILL_VALUE = "fill_value"        # node.meta key of a rewritten ConstantOfShape: its float value
# on the Sub that express_size_value writes: the size term its one value is (resolve_cache_positions reads it)
SIZE_TERM = "size_term"


def fill_value(node: Node) -> float | None:
    """The float a ConstantOfShape fills with (0.0 by default), None for non-float fills."""
    value = node.attrs.get("value")
    if value is None:
        return 0.0
    array = numpy_helper.to_array(value) if not isinstance(value, np.ndarray) else value
    if array.dtype.kind not in "fiu" or array.size != 1:
        return None
    number = float(array.reshape(-1)[0])
    # integers travel as floats in ncnn: a fill of one is exact below 2**24 (T5's full_like(buckets, n - 1))
    return number if array.dtype.kind == "f" or abs(number) < 2**24 else None


def _shape_of(terms: list[Term]) -> tuple:
    return tuple(known_value(t) for t in terms)


def express_fill(graph: Graph, node: Node, terms: list[Term]) -> bool:
    """A float ConstantOfShape whose shape is run-time terms keeps them for its lowering."""
    value = fill_value(node)
    out = graph.tensors[node.outputs[0]]
    if value is None or out.dtype.kind not in "fiu" or not terms:
        return False
    graph.set_inputs(node, [])
    node.attrs, node.meta = {}, {SHAPE_TERMS: list(terms), FILL_VALUE: value}
    pin_refs(graph, node, terms)
    out.shape = _shape_of(terms)
    return True


def _filled(graph: Graph, src: Node, terms: list[Term], value: float, stem: str) -> str:
    out = graph.add_tensor(Tensor(graph.fresh_name(stem), _shape_of(terms), np.dtype(np.float32)))
    fill = graph.add_node(Node(graph.fresh_name(f"{src.name}_fill"), "ConstantOfShape", [], [out.name],
                               meta={SHAPE_TERMS: list(terms), FILL_VALUE: value}, origin=src.origin or src.name))
    pin_refs(graph, fill, terms)
    return out.name


def _binary(graph: Graph, src: Node, kind: str, a: str, b: str, out: str | None = None) -> str:
    if out is None:
        out = graph.add_tensor(Tensor(graph.fresh_name(f"{src.name}_{kind.lower()}"),
                                      graph.tensors[a].shape, np.dtype(np.float32))).name
    graph.add_node(Node(graph.fresh_name(f"{src.name}_{kind.lower()}"), kind, [a, b], [out],
                        origin=src.origin or src.name))
    return out


def _integral_scalar(graph: Graph, name: str) -> int | None:
    value = graph.value(name)
    if value is None or value.size != 1:
        return None
    v = float(value.reshape(-1)[0])
    return int(v) if np.isfinite(v) and v == int(v) else None


def express_range(graph: Graph, node: Node, limit: Term) -> bool:
    """Range over a run-time limit, with integral constant start and delta."""
    out = graph.tensors[node.outputs[0]]
    start, delta = _integral_scalar(graph, node.inputs[0]), _integral_scalar(graph, node.inputs[2])
    if out.dtype.kind not in "fiu" or start is None or not delta:     # integers travel as floats
        return False
    span = op("-", limit, start) if delta > 0 else op("-", start, limit)
    step = abs(delta)
    count = op("//", op("+", span, step - 1), step)
    graph.remove_node(node)
    ones = _filled(graph, node, [count], 1.0, f"{out.name}_ones")
    axis = graph.add_constant(f"{out.name}_axis", np.array(0, dtype=np.int64)).name
    # the k-th value is start + delta * (k - 1) for the running count k = 1, 2, ...
    offset = start - delta
    counts = out.name if (delta, offset) == (1, 0) else graph.add_tensor(
        Tensor(graph.fresh_name(f"{out.name}_counts"), (known_value(count),), np.dtype(np.float32))).name
    graph.add_node(Node(graph.fresh_name(f"{node.name}_cumsum"), "CumSum", [ones, axis], [counts],
                        origin=node.origin or node.name))
    current = counts
    if delta != 1:
        scale = graph.add_constant(f"{out.name}_delta", np.array(delta, dtype=np.float32)).name
        current = _binary(graph, node, "Mul", current, scale, out.name if offset == 0 else None)
    if offset != 0:
        shift = graph.add_constant(f"{out.name}_offset", np.array(offset, dtype=np.float32)).name
        _binary(graph, node, "Add", current, shift, out.name)
    out.shape = (known_value(count),)
    return True


def express_expand(graph: Graph, node: Node, terms: list[Term]) -> bool:
    """Expand to a run-time shape: x times ones of that shape broadcasts both ways, as Expand does."""
    x, out = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    value = graph.value(x.name)
    if value is not None and value.ndim == 0 and value.dtype.kind in "iu" and abs(int(value)) < 2**24:
        # an integer number to a run-time shape is a fill of it, as a float (T5's full_like)
        graph.remove_node(node)
        fill = graph.add_node(Node(graph.fresh_name(f"{node.name}_fill"), "ConstantOfShape", [], [out.name],
                                   meta={SHAPE_TERMS: list(terms), FILL_VALUE: float(value.reshape(-1)[0])},
                                   origin=node.origin or node.name))
        pin_refs(graph, fill, terms)
        out.shape = _shape_of(terms)
        return True
    if x.dtype.kind != "f" or x.shape is None or not terms:
        return False
    graph.remove_node(node)
    ones = _filled(graph, node, terms, 1.0, f"{out.name}_ones")
    _binary(graph, node, "Mul", x.name, ones, out.name)
    rank = max(len(terms), x.rank)
    aligned = [1] * (rank - x.rank) + list(x.shape)
    target = [1] * (rank - len(terms)) + [known_value(t) for t in terms]
    out.shape = tuple(a if b == 1 else b if a == 1 else (a or b) for a, b in zip(aligned, target))
    return True


def express_size_value(graph: Graph, node: Node, sizes: list, math) -> bool:
    """A run-time size used as a number by data arithmetic (a decoder's cache_position =
    arange(T) + past length): the size as a tensor, ReduceSum(ones([n + 1])) - 1 (never an empty
    fill, which ncnn cannot hold). Only a size that is one term, added to or multiplying a computed
    (not constant) tensor."""
    k = 0 if sizes[0] is not None else 1
    name, other = node.inputs[k], node.inputs[1 - k]
    if len(sizes[k]) != 1 or isinstance(sizes[k][0], int) or graph.value(other) is not None \
            or graph.tensors[name].rank not in (0, 1) or node.op not in ("Add", "Sub", "Mul"):
        return False
    ones = _filled(graph, node, [op("+", sizes[k][0], 1)], 1.0, f"{name}_ones")
    total = graph.add_tensor(Tensor(graph.fresh_name(f"{name}_count"), (), np.dtype(np.float32))).name
    graph.add_node(Node(graph.fresh_name(f"{node.name}_count"), "ReduceSum", [ones], [total],
                        attrs={"keepdims": 0}, origin=node.origin or node.name))
    one = graph.add_constant(f"{name}_one", np.array(1, dtype=np.float32)).name
    value = graph.add_tensor(Tensor(graph.fresh_name(f"{name}_value"), graph.tensors[name].shape,
                                    graph.tensors[name].dtype)).name
    _binary(graph, node, "Sub", total, one, value)
    graph.producer(value).meta[SIZE_TERM] = sizes[k][0]
    graph.replace_input(node, k, value)
    return True


def shift_range_start(graph: Graph, node: Node) -> bool:
    """Integer Range(s, l, d) with s a run-time size (transformers 4's cache_position = arange(past,
    past + T)) is s + Range(0, l - s, d): its length l - s is then a term ((past + T) - past is T) that
    express_range takes, and s a size added to a computed tensor (express_size_value)."""
    start, limit, delta = node.inputs
    out = graph.tensors[node.outputs[0]]
    if out.dtype.kind not in "iu" or graph.value(start) is not None or _integral_scalar(graph, delta) is None:
        return False
    span = graph.add_tensor(Tensor(graph.fresh_name(f"{out.name}_span"), (), graph.tensors[limit].dtype)).name
    graph.add_node(Node(graph.fresh_name(f"{node.name}_span"), "Sub", [limit, start], [span],
                        origin=node.origin or node.name))
    zero = graph.add_constant(f"{out.name}_zero", np.array(0, graph.tensors[start].dtype)).name
    counts = graph.add_tensor(Tensor(graph.fresh_name(f"{out.name}_from0"), out.shape, out.dtype)).name
    graph.remove_node(node)
    graph.add_node(Node(node.name, "Range", [zero, span, delta], [counts], origin=node.origin or node.name))
    graph.add_node(Node(graph.fresh_name(f"{node.name}_shift"), "Add", [counts, start], [out.name],
                        origin=node.origin or node.name))
    return True
