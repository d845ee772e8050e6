"""Integer -> float -> Log chain -> integer becomes a count of integer thresholds crossed.

T5's relative-position buckets take n = |j - i| (an integer) to
    trunc(log(n / max_exact) / log(max_distance / max_exact) * (num_buckets - max_exact))
in float32. Where that value is an integer in exact arithmetic (n = 16, 32, ... for T5's
defaults) the float32 result lands on one side of it or the other depending on the last bit of
the log, and ncnn's log and onnxruntime's need not agree on it. On a (S, S) grid of run-time size
the chain cannot be folded; instead, as the function is non-decreasing in n, it is

    trunc(chain(n)) = g0 + sum over k of (n >= t_k)

with t_k the smallest integer whose float32 value (operations in float32, the log rounded
correctly from float64) reaches g0 + k, found by bisection once at conversion time, for n up to
2**24 (where integers held as float stay exact). Below the Log's domain (an argument <= 0) the
chain casts -inf or NaN to an integer, which ONNX leaves undefined; the count gives g0 there.
Matched: Cast(int -> float), then Div/Mul by positive constants, Add/Sub of constants (the
tensor first) and exactly one Log, then Cast(float -> int), each step read only by the next.
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

from converter.ir import Graph, Node, Tensor

LIMIT = 2**24           # integers held as float32 are exact up to here
MAX_THRESHOLDS = 256    # a steeper staircase is left to the float chain
STEPS = {"Div", "Mul", "Add", "Sub", "Log"}
FLOAT_TYPES = {TensorProto.FLOAT}
INT_TYPES = {TensorProto.INT64, TensorProto.INT32}


def _step(graph: Graph, node: Node, x: str) -> tuple[str, float] | None:
    """(op, constant) of an increasing step x -> op(x, c); None if it is not one."""
    if node.op == "Log":
        return ("Log", 0.0)
    if len(node.inputs) != 2 or node.inputs[0] != x:
        return None
    c = graph.value(node.inputs[1])
    if c is None or c.size != 1 or not np.isfinite(c).all():
        return None
    c = float(c.reshape(-1)[0])
    return (node.op, c) if node.op in ("Add", "Sub") or c > 0 else None


def _chain(graph: Graph, cast: Node) -> tuple[list[tuple[str, float]], list[Node], Node] | None:
    """The steps after an int -> float Cast up to a float -> int Cast, with exactly one Log."""
    steps, nodes, current = [], [], cast.outputs[0]
    while True:
        readers = graph.consumers(current)
        if graph.use_count(current) != 1 or len(readers) != 1 or readers[0].ncnn or current in graph.outputs:
            return None
        node = readers[0]
        if node.op == "Cast":
            logs = sum(op == "Log" for op, _ in steps)
            return (steps, nodes, node) if logs == 1 and node.attrs.get("to") in INT_TYPES else None
        step = _step(graph, node, current) if node.op in STEPS else None
        if step is None:
            return None
        steps.append(step)
        nodes.append(node)
        current = node.outputs[0]


def _evaluate(steps: list[tuple[str, float]], n: np.ndarray, upto_log: bool = False) -> np.ndarray:
    """The chain in float32 on integers n (the log correctly rounded); up to the Log's argument."""
    x = n.astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        for op, c in steps:
            if op == "Log":
                if upto_log:
                    return x
                x = np.log(x.astype(np.float64)).astype(np.float32)
            else:
                c32 = np.float32(c)
                x = {"Div": np.divide, "Mul": np.multiply, "Add": np.add, "Sub": np.subtract}[op](x, c32)
    return x


def _first(predicate, low: int, high: int) -> int:
    """The smallest n in [low, high] with predicate(n) (predicate monotone, true at high)."""
    while low < high:
        mid = (low + high) // 2
        low, high = (low, mid) if predicate(mid) else (mid + 1, high)
    return low


def thresholds(steps: list[tuple[str, float]]) -> tuple[int, list[int]] | None:
    """(g0, [t_1, ...]): trunc(chain(n)) = g0 + #{k: n >= t_k} for every integer n in the Log's
    domain up to LIMIT; None when the Log's domain is empty or the staircase flat or too long."""
    arg = lambda n: _evaluate(steps, np.array(n), upto_log=True) > 0      # noqa: E731
    if not arg(LIMIT):
        return None
    start = _first(arg, -LIMIT, LIMIT)
    value = lambda n: np.trunc(_evaluate(steps, np.array(n)))             # noqa: E731
    low, high = value(start), value(LIMIT)
    if not (np.isfinite(low) and np.isfinite(high)) or not 0 < high - low <= MAX_THRESHOLDS:
        return None
    return int(low), [_first(lambda n, k=k: value(n) >= k, start, LIMIT) for k in range(int(low) + 1, int(high) + 1)]


def _tensor(graph: Graph, stem: str, shape, dtype) -> str:
    return graph.add_tensor(Tensor(graph.fresh_name(stem), shape, np.dtype(dtype))).name


def _rewrite(graph: Graph, cast: Node, nodes: list[Node], last: Node, g0: int, ts: list[int]) -> None:
    """y = g0 + ReduceSum(Cast(Unsqueeze(x, -1) >= thresholds), -1) in float, cast back to y's type."""
    x, y = cast.outputs[0], last.outputs[0]
    shape = graph.tensors[x].shape
    for node in [*nodes, last]:
        graph.remove_node(node)
    origin = last.origin or last.name
    wide = None if shape is None else (*shape, 1)
    crossed_shape = None if shape is None else (*shape, len(ts))

    def add(op, inputs, out, **attrs):
        graph.add_node(Node(graph.fresh_name(f"{last.name}_{op.lower()}"), op, inputs, [out], attrs, origin=origin))

    column = _tensor(graph, f"{y}_column", wide, np.float32)
    add("Unsqueeze", [x, graph.add_constant(f"{y}_last", np.array([-1], np.int64)).name], column)
    crossed = _tensor(graph, f"{y}_crossed", crossed_shape, np.bool_)
    add("GreaterOrEqual", [column, graph.add_constant(f"{y}_thresholds", np.array(ts, np.float32)).name], crossed)
    counted = _tensor(graph, f"{y}_counted", crossed_shape, np.float32)
    add("Cast", [crossed], counted, to=TensorProto.FLOAT)
    summed = _tensor(graph, f"{y}_summed", shape, np.float32)
    add("ReduceSum", [counted, graph.add_constant(f"{y}_axis", np.array([-1], np.int64)).name], summed,
        keepdims=0)
    total = _tensor(graph, f"{y}_total", shape, np.float32)
    add("Add", [summed, graph.add_constant(f"{y}_base", np.array(g0, np.float32)).name], total)
    add("Cast", [total], y, to=last.attrs["to"])


def convert_log_buckets(graph: Graph) -> dict:
    converted = 0
    for cast in [n for n in graph.topological() if n.op == "Cast" and not n.ncnn]:
        x = graph.tensors[cast.outputs[0]]
        # the thresholds go along a new innermost axis: x may have at most 3 (ncnn holds 4)
        if cast.attrs.get("to") not in FLOAT_TYPES or graph.tensors[cast.inputs[0]].dtype.kind not in "iu" \
                or x.is_constant or x.rank is None or x.rank > 3:
            continue
        found = _chain(graph, cast)
        staircase = found and thresholds(found[0])
        if not staircase:
            continue
        _rewrite(graph, cast, found[1], found[2], *staircase)
        converted += 1
    if converted:
        graph.remove_unused_tensors()
    return {"log_buckets_converted": converted}
