"""A Transpose of a Transpose that nothing else reads becomes one Transpose, or nothing where they cancel.

torchvision's MaxViT, exported by dynamo, partitions a 4x4 feature map into windows and straight back
into a grid: [1, 2, 2, 2, 2, 32] permuted by (0, 5, 1, 3, 2, 4) and then by (0, 2, 4, 3, 5, 1), which
compose to the identity. Apart, each moves six axes that the Reshapes around keep apart, more than
ncnn's Permute holds; together they are nothing. Composing is exact (values are only moved); the
first Transpose must be read by the second alone, so no tensor disappears that another node reads.
One walk in order: a chain of three folds as its links are reached.
"""
from __future__ import annotations

from converter.ir import Graph, Node


def _perm(graph: Graph, node: Node) -> list[int] | None:
    rank = graph.tensors[node.inputs[0]].rank
    if rank is None:
        return None
    return [int(p) for p in node.attrs.get("perm") or reversed(range(rank))]


def fold_transpose_chains(graph: Graph) -> dict:
    folded = cancelled = 0
    for node in graph.onnx_nodes_of("Transpose"):
        first = graph.producer(node.inputs[0])
        if first is None or first.op != "Transpose" or first.ncnn or first.outputs[0] in graph.outputs \
                or graph.use_count(first.outputs[0]) != 1:
            continue
        outer, inner = _perm(graph, first), _perm(graph, node)
        if outer is None or inner is None:
            continue
        perm = [outer[p] for p in inner]
        graph.remove_node(first)
        graph.remove_node(node)
        origin = node.origin or node.name
        out = node.outputs[0]
        if perm != list(range(len(perm))):
            graph.add_node(Node(node.name, "Transpose", [first.inputs[0]], [out], {"perm": perm}, origin=origin))
            folded += 1
        elif out in graph.outputs:
            graph.add_node(Node(node.name, "Identity", [first.inputs[0]], [out], origin=origin))
            cancelled += 1
        else:
            graph.replace_all_uses(out, first.inputs[0])
            cancelled += 1
    if folded or cancelled:
        graph.remove_unused_tensors()
    return {"transposes_folded": folded, "transposes_cancelled": cancelled}
