"""Fuse the decomposed hard-swish exporters write into one ncnn HardSwish layer.

    x * Clip(x + 3, 0, 6) / 6        (torch's and paddle's export; / 6 may be * (1/6),
                                      and the division may come before the product)
    x * HardSigmoid(x, 1/6, 0.5)     (paddle's PP-LCNet)

Both equal x * clip(x/6 + 1/2, 0, 1), ncnn's HardSwish with alpha 1/6, beta 1/2,
to within float32 rounding. One real-model block of four BinaryOp/Clip layers
becomes one layer (PP-OCR's backbones have dozens). Every intermediate result
must be read only inside the pattern. One walk over the Clips and HardSigmoids
(converter/rewrite/driver.py).
"""
from __future__ import annotations

from converter.ir import Graph, Node
from converter.rewrite.driver import Match, Miss, apply, need, rule
from converter.rewrite.patterns import near, other, scalar

SIXTH = 1.0 / 6.0


def _close(value: float | None, want: float) -> bool:
    return near(value, want, rtol=0.0, atol=1e-6 * max(1.0, abs(want)))


def _only_reader(graph: Graph, tensor: str) -> Node | None:
    readers = graph.consumers(tensor)
    if graph.use_count(tensor) != 1 or len(readers) != 1 or readers[0].ncnn:
        return None
    return readers[0]


def _divides_by_six(graph: Graph, node: Node | None, value: str) -> bool:
    """`node` is value / 6 or value * (1/6)."""
    if node is None:
        return False
    if node.op == "Div":
        return node.inputs[0] == value and _close(scalar(graph, node.inputs[1]), 6.0)
    return node.op == "Mul" and _close(scalar(graph, other(node, value) or ""), SIXTH)


def _clip_bounds(graph: Graph, clip: Node) -> tuple[float | None, float | None]:
    if "min" in clip.attrs or "max" in clip.attrs:      # opset < 11
        return clip.attrs.get("min"), clip.attrs.get("max")
    inputs = clip.inputs + ["", ""]
    return scalar(graph, inputs[1]), scalar(graph, inputs[2])


def _clip_form(graph: Graph, clip: Node) -> tuple[str, list[Node]]:
    """x and the pattern's nodes for x * Clip(x + 3, 0, 6) / 6 in either order."""
    low, high = _clip_bounds(graph, clip)
    add = graph.producer(clip.inputs[0])
    need(add is not None and add.op == "Add" and not add.ncnn, "the Clip's input is not x + 3")
    if not (_close(low, 0.0) and _close(high, 6.0)):
        raise Miss(f"the Clip's bounds are {low}, {high}, not 0, 6")
    x = next((i for i in add.inputs if _close(scalar(graph, other(add, i) or ""), 3.0)), None)
    need(x is not None, "the Add before the Clip adds no constant 3")
    need(_only_reader(graph, add.outputs[0]) is clip, "x + 3 is read outside the pattern")
    first = _only_reader(graph, clip.outputs[0])
    need(first is not None, "the Clip's output is not read by one node only")
    if first.op == "Mul" and other(first, clip.outputs[0]) == x:           # (x * clip) / 6
        last = _only_reader(graph, first.outputs[0])
        need(_divides_by_six(graph, last, first.outputs[0]), "x * Clip(...) is not divided by 6 (or times 1/6)")
        return x, [add, clip, first, last]
    need(_divides_by_six(graph, first, clip.outputs[0]), "the Clip's output is multiplied by neither x nor 1/6")
    last = _only_reader(graph, first.outputs[0])                            # x * (clip / 6)
    need(last is not None and last.op == "Mul" and other(last, first.outputs[0]) == x,
         "Clip(...) / 6 is not multiplied by the x the Add reads")
    return x, [add, clip, first, last]


def _hardsigmoid_form(graph: Graph, hs: Node) -> tuple[str, list[Node]]:
    if not (_close(hs.attrs["alpha"], SIXTH) and _close(hs.attrs["beta"], 0.5)):
        raise Miss(f"alpha, beta are {hs.attrs['alpha']:.7g}, {hs.attrs['beta']:.7g}, not 1/6, 0.5")
    x = hs.inputs[0]
    mul = _only_reader(graph, hs.outputs[0])
    need(mul is not None and mul.op == "Mul" and other(mul, hs.outputs[0]) == x,
         "the HardSigmoid's output is not multiplied by its input (and read nowhere else)")
    return x, [hs, mul]


def _match(graph: Graph, node: Node) -> Match:
    x, nodes = (_clip_form if node.op == "Clip" else _hardsigmoid_form)(graph, node)
    need(graph.tensors[x].dtype.kind == "f", f"x is {graph.tensors[x].dtype}, not a float")
    return Match(nodes, x=x)


def _build(graph: Graph, m: Match) -> list[Node]:
    last = m.nodes[-1]
    return [Node(last.name, "HardSwish", [m.x], [last.outputs[0]], params={0: SIXTH, 1: 0.5},
                 ncnn=True, origin=last.origin or last.name)]


RULE = rule("fuse_hardswish", "hardswish_fused", ("Clip", "HardSigmoid"), _match, _build)


def fuse_hardswish(graph: Graph) -> dict:
    return apply(graph, RULE)
