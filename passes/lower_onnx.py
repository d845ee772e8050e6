"""Replace every ONNX node by the ncnn layers its registered lowering returns.

Unsupported ops are collected first and reported all at once, so the user
sees the whole list in one run. Graph inputs get Input layers.
"""
from __future__ import annotations

import networkx as nx

from converter.ir import ConversionError, Graph, Node
from converter.ncnn_side.axes import MAX_NCNN_RANK
from converter.onnx_side.cut import CutRefusal
from converter.lowering import LOWERINGS, load_all
from converter.lowering.common import depends_on


def check_all_lowered(graph: Graph) -> None:
    """Invariant after this pass: every node is an ncnn layer."""
    left = [node.describe() for node in graph.nodes.values() if not node.ncnn]
    if left:
        raise AssertionError(f"{len(left)} ONNX node(s) left unlowered, e.g. {left[0]}")


def lower_onnx(graph: Graph) -> dict:
    load_all()
    onnx_nodes = [n for n in graph.topological() if not n.ncnn]
    missing = [n for n in onnx_nodes if n.op not in LOWERINGS]
    sizes = [n for n in missing if _computes_sizes(graph, n)]
    if sizes:    # shape math left unfolded: a size is unknown, not an op missing
        # name the node that uses the size in a way ncnn cannot express, not the arithmetic before it
        n = next((m for m in sizes if any(t.dtype.kind == "f" for t in map(graph.tensors.get, m.outputs) if t)),
                 sizes[0])
        raise CutRefusal(f"{n.describe()} computes sizes at run time, which ncnn cannot: "
                         f"{depends_on(graph, n.outputs[0])}", [o for m in missing for o in m.outputs])
    if missing:
        listed = ", ".join(f"{n.op} ('{n.name}')" for n in missing)
        raise CutRefusal(f"unsupported ONNX ops, nothing written: {listed}",
                         [o for n in missing for o in n.outputs])
    new_inputs = [i for i in graph.inputs if graph.producer(i) is None]     # once, even run twice
    for name in new_inputs:
        _check_rank(graph, name, f"input '{name}'")
        graph.add_node(Node(graph.fresh_name(f"{name}_input"), "Input", [], [name], ncnn=True,
                            origin=name))
    layers = len(new_inputs)
    for node in onnx_nodes:
        try:
            replacement = LOWERINGS[node.op](graph, node)
        except CutRefusal:
            raise
        except ConversionError as exc:      # a host tail can run what a lowering refuses
            raise CutRefusal(str(exc), list(node.outputs)) from None
        graph.remove_node(node)
        for new in replacement:
            graph.add_node(new)
            for out in new.outputs:
                _check_rank(graph, out, f"{node.op} node '{node.name}' output '{out}'")
        layers += len(replacement)
        _release_constants(graph, node)
    return {"onnx_nodes_lowered": len(onnx_nodes), "ncnn_layers_made": layers}


def _release_constants(graph: Graph, node: Node) -> None:
    """A constant the lowered node alone read (its weights, now copied into its layers in their
    own layout) leaves the graph at once: a decoder's 2 GB of weights are not held twice."""
    for name in set(node.inputs):
        t = graph.tensors.get(name)
        if t is not None and t.is_constant and name not in graph.outputs and not graph.use_count(name):
            del graph.tensors[name]


def _check_rank(graph: Graph, name: str, what: str) -> None:
    t = graph.tensors[name]
    if t.shape is not None and len(t.ncnn_shape) > MAX_NCNN_RANK:
        raise ConversionError(
            f"{what} has shape {list(t.shape)}: {len(t.ncnn_shape)} axes without the batch axis, "
            f"ncnn holds at most {MAX_NCNN_RANK}")


def _computes_sizes(graph: Graph, node: Node) -> bool:
    """A Shape of a computed tensor, or a node fed by one."""
    return node.op == "Shape" or "Shape" in {graph.nodes[a].op for a in _ancestors(graph, node)}


def _ancestors(graph: Graph, node: Node) -> set[str]:
    return nx.ancestors(graph.wiring, node.name)
