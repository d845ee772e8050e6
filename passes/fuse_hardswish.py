"""Fuse the decomposed hard-swish exporters write into one ncnn HardSwish layer.

    x * Clip(x + 3, 0, 6) / 6        (torch's and paddle's export; / 6 may be * (1/6),
                                      and the division may come before the product)
    x * HardSigmoid(x, 1/6, 0.5)     (paddle's PP-LCNet)

Both equal x * clip(x/6 + 1/2, 0, 1), ncnn's HardSwish with alpha 1/6, beta 1/2,
to within float32 rounding. One real-model block of four BinaryOp/Clip layers
becomes one layer (PP-OCR's backbones have dozens). Every intermediate result
must be read only inside the pattern. One walk over the Clips and HardSigmoids.
"""
from __future__ import annotations

from converter.ir import Graph, Node

SIXTH = 1.0 / 6.0


def _scalar(graph: Graph, name: str) -> float | None:
    value = graph.value(name) if name else None
    return None if value is None or value.size != 1 else float(value.reshape(-1)[0])


def _close(value: float | None, want: float) -> bool:
    return value is not None and abs(value - want) <= 1e-6 * max(1.0, abs(want))


def _only_reader(graph: Graph, tensor: str) -> Node | None:
    readers = graph.consumers(tensor)
    if graph.use_count(tensor) != 1 or len(readers) != 1 or readers[0].ncnn:
        return None
    return readers[0]


def _other(node: Node, name: str) -> str | None:
    """The other input of a two-input node one of whose inputs is `name`."""
    if len(node.inputs) != 2 or name not in node.inputs:
        return None
    return node.inputs[1] if node.inputs[0] == name else node.inputs[0]


def _divides_by_six(graph: Graph, node: Node | None, value: str) -> bool:
    """`node` is value / 6 or value * (1/6)."""
    if node is None:
        return False
    if node.op == "Div":
        return node.inputs[0] == value and _close(_scalar(graph, node.inputs[1]), 6.0)
    return node.op == "Mul" and _close(_scalar(graph, _other(node, value) or ""), SIXTH)


def _clip_bounds(graph: Graph, clip: Node) -> tuple[float | None, float | None]:
    if "min" in clip.attrs or "max" in clip.attrs:      # opset < 11
        return clip.attrs.get("min"), clip.attrs.get("max")
    inputs = clip.inputs + ["", ""]
    return _scalar(graph, inputs[1]), _scalar(graph, inputs[2])


def _clip_form(graph: Graph, clip: Node) -> tuple[str, list[Node]] | None:
    """x and the pattern's nodes for x * Clip(x + 3, 0, 6) / 6 in either order."""
    low, high = _clip_bounds(graph, clip)
    add = graph.producer(clip.inputs[0])
    if add is None or add.op != "Add" or add.ncnn or not (_close(low, 0.0) and _close(high, 6.0)):
        return None
    x = next((i for i in add.inputs if _close(_scalar(graph, _other(add, i) or ""), 3.0)), None)
    if x is None or _only_reader(graph, add.outputs[0]) is not clip:
        return None
    first = _only_reader(graph, clip.outputs[0])
    if first is None:
        return None
    if first.op == "Mul" and _other(first, clip.outputs[0]) == x:          # (x * clip) / 6
        last = _only_reader(graph, first.outputs[0])
        return (x, [add, clip, first, last]) if _divides_by_six(graph, last, first.outputs[0]) else None
    if _divides_by_six(graph, first, clip.outputs[0]):                      # x * (clip / 6)
        last = _only_reader(graph, first.outputs[0])
        if last is not None and last.op == "Mul" and _other(last, first.outputs[0]) == x:
            return x, [add, clip, first, last]
    return None


def _hardsigmoid_form(graph: Graph, hs: Node) -> tuple[str, list[Node]] | None:
    if not (_close(hs.attrs["alpha"], SIXTH) and _close(hs.attrs["beta"], 0.5)):
        return None
    x = hs.inputs[0]
    mul = _only_reader(graph, hs.outputs[0])
    if mul is None or mul.op != "Mul" or _other(mul, hs.outputs[0]) != x:
        return None
    return x, [hs, mul]


def fuse_hardswish(graph: Graph) -> dict:
    fused = 0
    forms = {"Clip": _clip_form, "HardSigmoid": _hardsigmoid_form}
    for node in [n for n in graph.topological() if n.op in forms and not n.ncnn]:
        if node.name not in graph.nodes:           # already taken by an earlier match
            continue
        match = forms[node.op](graph, node)
        if match is None or graph.tensors[match[0]].dtype.kind != "f":
            continue
        x, nodes = match
        last = nodes[-1]
        for n in nodes:
            graph.remove_node(n)
        graph.add_node(Node(last.name, "HardSwish", [x], [last.outputs[0]], params={0: SIXTH, 1: 0.5},
                            ncnn=True, origin=last.origin or last.name))
        fused += 1
    if fused:
        graph.remove_unused_tensors()
    return {"hardswish_fused": fused}
