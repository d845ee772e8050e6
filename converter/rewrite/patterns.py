"""Matching helpers the fusion passes share (a scalar constant and how near it is, the other operand of
a two-input node in either order, the sole reader), and the
pieces of written-out normalizations that fuse_layernorm and fuse_rmsnorm both match.

    inv = 1 / sqrt(mean + eps)      as Add(eps) -> Sqrt -> Div(num, .)  or  -> Reciprocal -> Mul(num, .)

and the trailing-axes ReduceMean both start from. A match never crosses a tensor that something
outside it reads or that is a graph output.
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node
from converter.rewrite.driver import Miss


def scalar(graph: Graph, name: str) -> float | None:
    value = graph.value(name) if name else None
    if value is None or value.size != 1 or value.dtype.kind != "f":
        return None
    return float(value.reshape(-1)[0])


def near(value: float | None, want: float, rtol: float = 1e-6, atol: float = 0.0) -> bool:
    """|value - want| <= atol + rtol * |want| (numpy's isclose), False for no value."""
    return value is not None and abs(value - want) <= atol + rtol * abs(want)


def expect_scalar(graph: Graph, name: str | None, want: float, what: str, rtol: float = 1e-6,
                  atol: float = 0.0) -> None:
    """Raise Miss unless `name` is a one-element float constant near `want`; the reason names `what`
    and what it holds instead ("the Add after Erf's other operand is 2, not 1")."""
    value = scalar(graph, name) if name else None
    if near(value, want, rtol, atol):
        return
    if value is not None:
        raise Miss(f"{what} is {value:.7g}, not {want:.7g}")
    if not name:
        raise Miss(f"{what} is missing")
    raise Miss(f"{what} is not a constant" if graph.value(name) is None
               else f"{what} is not a one-element float constant")


def other(node: Node, name: str) -> str | None:
    """The other operand of a two-input node that reads `name` once."""
    if len(node.inputs) != 2 or node.inputs.count(name) != 1:
        return None
    return node.inputs[1 - node.inputs.index(name)]


def times(graph: Graph, node: Node | None, want: float, rtol: float = 1e-6) -> str | None:
    """x for node = x * c or c * x, c a scalar constant near `want` (both operand orders tried here, once)."""
    if node is None or node.op != "Mul" or len(node.inputs) != 2 or node.ncnn:
        return None
    for x, c in (node.inputs, node.inputs[::-1]):
        if near(scalar(graph, c), want, rtol):
            return x
    return None


def sole_reader(graph: Graph, name: str, *ops: str) -> Node | None:
    """The only reader of `name` if it is one of `ops` and `name` is not a graph output."""
    readers = graph.consumers(name)
    if graph.use_count(name) != 1 or len(readers) != 1 or readers[0].op not in ops or readers[0].ncnn:
        return None
    return readers[0]


def trailing_mean_axis(graph: Graph, node: Node) -> int | None:
    """The first axis of a keepdims ReduceMean over the input's trailing axes, else None."""
    if node.op != "ReduceMean" or node.ncnn or not node.attrs["keepdims"]:
        return None
    x = graph.tensors[node.inputs[0]]
    axes = node.attrs.get("axes")
    if axes is None and len(node.inputs) > 1 and node.inputs[1]:
        value = graph.value(node.inputs[1])
        axes = None if value is None else value.reshape(-1).tolist()
    if axes is None or not axes or x.rank is None or x.dtype != np.float32:
        return None
    axes = sorted(int(a) % x.rank for a in axes)
    if axes != list(range(axes[0], x.rank)):
        return None
    return axes[0]


def is_square_of(graph: Graph, node: Node | None, x: str) -> bool:
    """node = x ** 2 or x * x."""
    if node is None or node.ncnn:
        return False
    if node.op == "Pow":
        return node.inputs[0] == x and scalar(graph, node.inputs[1]) == 2.0
    return node.op == "Mul" and node.inputs == [x, x]


def inverse_std(graph: Graph, mean: str, num: str) -> tuple[float, list[Node], str] | None:
    """(eps, nodes, result) for result = num / sqrt(mean + eps), written as a Div or as a
    Reciprocal and a Mul (either operand order); eps a scalar constant."""
    add = sole_reader(graph, mean, "Add")
    eps = None if add is None else scalar(graph, other(add, mean) or "")
    if eps is None or eps < 0 or graph.tensors[add.outputs[0]].shape != graph.tensors[mean].shape:
        return None
    sqrt = sole_reader(graph, add.outputs[0], "Sqrt")
    if sqrt is None:
        return None
    std = sqrt.outputs[0]
    div = sole_reader(graph, std, "Div", "Reciprocal")
    if div is None:
        return None
    if div.op == "Div" and div.inputs == [num, std]:
        return eps, [add, sqrt, div], div.outputs[0]
    if div.op == "Div" and (div.inputs[1] != std or scalar(graph, div.inputs[0]) != 1.0):
        return None         # else 1 / std, a reciprocal (HF Qwen/Llama's torch.rsqrt through TorchScript)
    mul = sole_reader(graph, div.outputs[0], "Mul")
    if mul is None or other(mul, div.outputs[0]) != num:
        return None
    return eps, [add, sqrt, div, mul], mul.outputs[0]


def affine(graph: Graph, name: str, op: str, axis: int) -> tuple[Node, np.ndarray] | None:
    """(node, constant) when the only reader of `name` multiplies (op "Mul") or shifts ("Add") it
    by a constant that varies only along the normalized axes from `axis` (so it is one value per
    normalized element) and leaves the shape as it is."""
    node = sole_reader(graph, name, op)
    const = None if node is None else other(node, name)
    value = None if const is None else graph.value(const)
    x = graph.tensors[name]
    if value is None or value.dtype != np.float32 or graph.tensors[node.outputs[0]].shape != x.shape:
        return None
    normalized = x.rank - axis
    while value.ndim > normalized and value.shape[0] == 1:
        value = value[0]
    if value.ndim > normalized:
        return None
    return node, value


def scale_of(graph: Graph, node: Node) -> tuple[str, float] | None:
    """(the scaled operand, the factor) for node = x * c, c * x or x / c with a scalar constant c."""
    if node.op == "Div" and len(node.inputs) == 2:
        c = scalar(graph, node.inputs[1])
        return None if c is None or c == 0 else (node.inputs[0], 1.0 / c)
    if node.op == "Mul" and len(node.inputs) == 2:
        for x, c in (node.inputs, node.inputs[::-1]):
            if scalar(graph, c) is not None and scalar(graph, x) is None:
                return x, scalar(graph, c)
    return None


def scaled_matmul(graph: Graph, name: str) -> tuple[Node, list[Node], float] | None:
    """(MatMul, scale nodes, their product) for name = MatMul(...) scaled by scalar constants."""
    nodes, scale = [], 1.0
    while True:
        node = graph.producer(name)
        if node is None or node.ncnn:
            return None
        if node.op == "MatMul":
            return node, nodes + [node], scale
        scaled = scale_of(graph, node)
        if scaled is None:
            return None
        nodes.append(node)
        name, scale = scaled[0], scale * scaled[1]


def read_only_inside(graph: Graph, nodes: list[Node], last: Node) -> bool:
    """Every tensor the matched nodes write (but the last node's) is read only by matched nodes."""
    names = {n.name for n in nodes}
    for node in nodes:
        if node is last:
            continue
        for out in node.outputs:
            if out in graph.outputs or any(c.name not in names for c in graph.consumers(out)):
                return False
    return True


def same_type_cast(graph: Graph, name: str) -> Node | None:
    """The only reader of `name` when it is a Cast that changes nothing (float32 to float32: HF's
    norms cast to float and back)."""
    node = sole_reader(graph, name, "Cast")
    if node is None or graph.tensors[name].dtype != np.float32 \
            or graph.tensors[node.outputs[0]].dtype != np.float32:
        return None
    return node


def unsqueezed_last(graph: Graph, name: str) -> str | None:
    """x for name = Unsqueeze(x, [last axis]) (torch.export stacks GatherND indices so), else None."""
    node = graph.producer(name)
    if node is None or node.op != "Unsqueeze" or len(node.inputs) < 2:
        return None
    axes, rank = graph.value(node.inputs[1]), graph.tensors[name].rank
    return node.inputs[0] if axes is not None and rank and [int(a) % rank for a in axes.reshape(-1)] == [rank - 1] \
        else None
