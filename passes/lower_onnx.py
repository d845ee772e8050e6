"""Replace every ONNX node by the ncnn layers its registered lowering returns.

Unsupported ops are collected first and reported all at once, so the user
sees the whole list in one run. Graph inputs get Input layers.
"""
from __future__ import annotations

from converter.ir import ConversionError, Graph, Node
from converter.lowering import LOWERINGS, load_all

MAX_NCNN_RANK = 4


def lower_onnx(graph: Graph) -> dict:
    load_all()
    onnx_nodes = [n for n in graph.topological() if not n.ncnn]
    missing = [n for n in onnx_nodes if n.op not in LOWERINGS]
    if missing:
        listed = ", ".join(f"{n.op} ('{n.name}')" for n in missing)
        raise ConversionError(f"unsupported ONNX ops, nothing written: {listed}")
    for name in graph.inputs:
        _check_rank(graph, name, f"input '{name}'")
        graph.add_node(Node(graph.fresh_name(f"{name}_input"), "Input", [], [name], ncnn=True,
                            origin=name))
    for node in onnx_nodes:
        replacement = LOWERINGS[node.op](graph, node)
        graph.remove_node(node)
        for new in replacement:
            graph.add_node(new)
            for out in new.outputs:
                _check_rank(graph, out, f"{node.op} node '{node.name}' output '{out}'")
    return {}


def _check_rank(graph: Graph, name: str, what: str) -> None:
    t = graph.tensors[name]
    if t.shape is not None and len(t.ncnn_shape) > MAX_NCNN_RANK:
        raise ConversionError(
            f"{what} has shape {list(t.shape)}: {len(t.ncnn_shape)} axes without the batch axis, "
            f"ncnn holds at most {MAX_NCNN_RANK}")
