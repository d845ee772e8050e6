"""Write the layers an older ncnn release lacks in the forms it has (--target-ncnn).

The target is the graph's `ncnn_target` (a release date; None: the newest known), set by the
conversion. Each rewrite is exact in float32 and fires only where the target lacks the layer or
op code (converter/ncnn_side/releases.py):
- BinaryOp logaddexp (20260526; Softplus's lowering): max(a, b) + log(1 + exp(-|a - b|));
- UnaryOp sign (20260526; comparisons, masks): clip(x * 2**126 * 2**126, -1, 1), where every
  nonzero float, denormals included, scales past 1 in magnitude (or to inf) and 0 stays 0;
- Flip (20250916): a Slice into ones along each flipped axis and a Concat in reverse order, where
  the axis has a known extent.
What else the target lacks is refused after the pipeline (converter/ncnn_side/release_target.py). One walk.
"""
from __future__ import annotations

from dataclasses import replace

from converter.ir import Graph, Node
from converter.ncnn_side.layers import BINARY_OPS, UNARY_OPS
from converter.ncnn_side.releases import BINARY_OP_TYPES, LAYERS, NEWEST, UNARY_OP_TYPES

LOGADDEXP, SIGN = BINARY_OPS["logaddexp"], UNARY_OPS["sign"]
MAX_FLIP_SLICES = 4096          # one Slice output per row: beyond this the file is not worth writing


def fit_target_release(graph: Graph) -> dict:
    target = getattr(graph, "ncnn_target", None) or NEWEST
    rewritten = 0
    for node in graph.topological():
        if node.op == "BinaryOp" and node.params.get(0) == LOGADDEXP and target < BINARY_OP_TYPES[LOGADDEXP]:
            graph.replace_nodes([node], _logaddexp(graph, node))
        elif node.op == "UnaryOp" and node.params.get(0) == SIGN and target < UNARY_OP_TYPES[SIGN]:
            graph.replace_nodes([node], _sign(graph, node))
        elif node.op == "Flip" and target < LAYERS["Flip"] and _flip_extents(graph, node) is not None:
            graph.replace_nodes([node], _flip(graph, node))
        else:
            continue
        rewritten += 1
    return {"release_rewrites": rewritten}


class _Steps:
    """New layers standing for `node`, each output a fresh blob shaped like `like`."""

    def __init__(self, graph: Graph, node: Node):
        self.graph, self.node, self.nodes = graph, node, []

    def add(self, op: str, inputs: list[str], params: dict, like: str, out: str | None = None,
            shape=None) -> str:
        if out is None:
            t = self.graph.tensors[like]
            out = self.graph.fresh_name(f"{self.node.name}_{op.lower()}")
            self.graph.add_tensor(replace(t, name=out, value=None, shape=shape or t.shape))
        name = self.graph.fresh_name(f"{self.node.name}_{op.lower()}")
        self.nodes.append(Node(name, op, list(inputs), [out], params=params, ncnn=True,
                               origin=self.node.origin or self.node.name))
        return out


def _logaddexp(graph: Graph, node: Node) -> list[Node]:
    s, out, p = _Steps(graph, node), node.outputs[0], node.params
    if p.get(1, 0):          # with a scalar b
        b = float(p.get(2, 0.0))
        a = node.inputs[0]
        diff = s.add("BinaryOp", [a], {0: BINARY_OPS["sub"], 1: 1, 2: b}, out) if b else a
        high = s.add("BinaryOp", [a], {0: BINARY_OPS["max"], 1: 1, 2: b}, out)
    else:
        diff = s.add("BinaryOp", node.inputs, {0: BINARY_OPS["sub"]}, out)
        high = s.add("BinaryOp", node.inputs, {0: BINARY_OPS["max"]}, out)
    gap = s.add("UnaryOp", [diff], {0: UNARY_OPS["abs"]}, out)
    gap = s.add("UnaryOp", [gap], {0: UNARY_OPS["neg"]}, out)
    gap = s.add("UnaryOp", [gap], {0: UNARY_OPS["exp"]}, out)
    gap = s.add("BinaryOp", [gap], {0: BINARY_OPS["add"], 1: 1, 2: 1.0}, out)
    gap = s.add("UnaryOp", [gap], {0: UNARY_OPS["log"]}, out)
    s.add("BinaryOp", [high, gap], {0: BINARY_OPS["add"]}, out, out=out)
    return s.nodes


def _sign(graph: Graph, node: Node) -> list[Node]:
    s, out = _Steps(graph, node), node.outputs[0]
    big = s.add("BinaryOp", node.inputs, {0: BINARY_OPS["mul"], 1: 1, 2: 2.0 ** 126}, out)
    big = s.add("BinaryOp", [big], {0: BINARY_OPS["mul"], 1: 1, 2: 2.0 ** 126}, out)
    s.add("Clip", [big], {0: -1.0, 1: 1.0}, out, out=out)
    return s.nodes


def _onnx_axis(t, ncnn_axis: int) -> int:
    return [i for i in range(len(t.shape)) if i != t.batch_axis][ncnn_axis]


def _flip_extents(graph: Graph, node: Node) -> list[tuple[int, int]] | None:
    """(ncnn axis, extent) per flipped axis, or None where an extent is unknown or too large."""
    t = graph.tensors[node.inputs[0]]
    shape = t.ncnn_shape
    if shape is None or t.onnx_shape is not None:
        return None
    axes = [a + len(shape) if a < 0 else a for a in node.params.get(0, ())]
    extents = [(a, shape[a]) for a in axes if 0 <= a < len(shape)]
    if len(extents) != len(axes) or any(n is None or n > MAX_FLIP_SLICES for _, n in extents):
        return None
    return extents


def _flip(graph: Graph, node: Node) -> list[Node]:
    s, x = _Steps(graph, node), node.inputs[0]
    extents = [(a, n) for a, n in _flip_extents(graph, node) if n > 1]
    t = graph.tensors[x]
    if not extents:
        s.add("Noop", [x], {}, x, out=node.outputs[0])
        return s.nodes
    for k, (axis, n) in enumerate(extents):
        last = k == len(extents) - 1
        shape = list(t.shape)
        shape[_onnx_axis(t, axis)] = 1
        pieces = [graph.fresh_name(f"{node.name}_row") for _ in range(n)]
        for piece in pieces:
            graph.add_tensor(replace(t, name=piece, value=None, shape=tuple(shape)))
        slicer = Node(graph.fresh_name(f"{node.name}_slice"), "Slice", [x], pieces,
                      params={0: [1] * n, 1: axis}, ncnn=True, origin=node.origin or node.name)
        s.nodes.append(slicer)
        x = s.add("Concat", pieces[::-1], {0: axis}, x, out=node.outputs[0] if last else None)
    return s.nodes
