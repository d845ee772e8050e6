"""Helpers shared by lowerings: building ncnn nodes, reading constants, clear errors."""
from __future__ import annotations

from typing import Any, Sequence

import networkx as nx
import numpy as np

from ..ir import ConversionError, Graph, Node, Shape, Tensor
from ..ncnn_layers import UNARY_OPS


def fail(node: Node, graph: Graph, why: str) -> ConversionError:
    shapes = ", ".join(str(list(graph.tensors[t].shape)) if t in graph.tensors and
                       graph.tensors[t].shape is not None else "?" for t in node.inputs if t)
    return ConversionError(f"{node.op} node '{node.name}' (input shapes {shapes}): {why}")


def layer(src: Node, graph: Graph, type_: str, inputs: Sequence[str], outputs: Sequence[str],
          params: dict[int, Any] | None = None, weights: Sequence[np.ndarray] = (),
          suffix: str = "") -> Node:
    """A new ncnn node standing for (part of) ONNX node `src`."""
    for pid, value in (params or {}).items():
        values = value if isinstance(value, (list, tuple)) else [value]
        if any(isinstance(v, float) and not np.isfinite(v) and abs(v) != np.inf for v in values):
            raise fail(src, graph, f"param {pid} of the {type_} layer is NaN; ncnn params cannot hold NaN")
    if any(np.size(w) == 0 for w in weights):
        raise fail(src, graph, f"an empty weight for the {type_} layer; ncnn cannot hold empty tensors")
    name = src.name + suffix
    if name in graph.nodes:
        name = graph.fresh_name(name)
    return Node(name, type_, list(inputs), list(outputs), params=dict(params or {}),
                weights=[np.asarray(w, dtype=np.float32).ravel() for w in weights],
                ncnn=True, origin=src.origin or src.name)


def new_tensor(graph: Graph, stem: str, shape: Shape | None, batch_axis: int | None) -> str:
    name = graph.fresh_name(stem)
    graph.add_tensor(Tensor(name, shape, batch_axis=batch_axis))
    return name


def tensor(graph: Graph, name: str) -> Tensor:
    return graph.tensors[name]


def constant(graph: Graph, node: Node, slot: int, what: str) -> np.ndarray:
    """The value of input `slot`, which must be a compile-time constant."""
    if slot >= len(node.inputs) or not node.inputs[slot]:
        raise fail(node, graph, f"{what} is missing")
    name = node.inputs[slot]
    value = graph.value(name)
    if value is None and name in graph.inputs:     # weights fed as an input: only their value helps
        raise fail(node, graph, f"{what} must be a constant, but '{name}' is a graph input; "
                                f"fix its value with --input-value {name}=V1,V2,...")
    if value is None:
        raise fail(node, graph, f"{what} must be a constant, but {depends_on(graph, name)}")
    return value


def optional_constant(graph: Graph, node: Node, slot: int, what: str) -> np.ndarray | None:
    if slot >= len(node.inputs) or not node.inputs[slot]:
        return None
    return constant(graph, node, slot, what)


def depends_on(graph: Graph, name: str) -> str:
    """Explain which graph inputs a non-constant tensor comes from, and how to fix it."""
    producer = graph.producer(name)
    sources = set(graph.inputs) & {name}
    if producer is not None:
        upstream = nx.ancestors(graph.wiring, producer.name) | {producer.name}
        sources |= {t for n in upstream for t in graph.nodes[n].inputs if t in graph.inputs}
    if not sources:
        return f"'{name}' is computed at run time"
    hint = " ".join(f"--input-shape {s}=DIMS" for s in sorted(sources))
    return f"'{name}' depends on the size of input(s) {', '.join(sorted(sources))}; fix it with {hint}"


def ncnn_axis(graph: Graph, node: Node, name: str, axis: int) -> int:
    """ONNX axis of tensor `name` -> ncnn (numpy-order) axis; the batch axis is refused."""
    t = graph.tensors[name]
    if t.rank is None:
        raise fail(node, graph, f"the rank of '{name}' is unknown")
    if not -t.rank <= axis < t.rank:
        raise fail(node, graph, f"axis {axis} is out of range for rank {t.rank}")
    mapped = t.ncnn_axis(axis)
    if mapped is None:
        raise fail(node, graph, f"operating along the batch axis ({axis}) is not supported by ncnn")
    return mapped


def ncnn_rank(graph: Graph, name: str) -> int:
    return len(graph.tensors[name].ncnn_shape)


def require_ncnn_rank(graph: Graph, node: Node, name: str, ranks: Sequence[int], what: str) -> int:
    t = graph.tensors[name]
    if t.shape is None:
        raise fail(node, graph, f"the rank of '{name}' is unknown")
    rank = len(t.ncnn_shape)
    if rank not in ranks:
        raise fail(node, graph, f"{what} needs a {' or '.join(map(str, ranks))}-D ncnn tensor "
                                f"(ONNX shape without the batch axis), got {list(t.shape)} "
                                f"with batch axis {t.batch_axis}")
    return rank


def unary_chain(src: Node, graph: Graph, x: str, out: str, ops: Sequence[str]) -> list[Node]:
    """UnaryOps applied in order to x, the last writing `out`; the steps between get x's shape."""
    t = graph.tensors[x]
    layers, current = [], x
    for k, op in enumerate(ops):
        target = out if k == len(ops) - 1 else new_tensor(graph, f"{out}_{op}", t.shape, t.batch_axis)
        suffix = f"_{op}" if list(ops).count(op) == 1 else f"_{op}{k}"     # the nodes join the graph later
        layers.append(layer(src, graph, "UnaryOp", [current], [target], {0: UNARY_OPS[op]}, suffix=suffix))
        current = target
    return layers
