"""A one-operand Einsum that only reorders its letters becomes the Transpose it is.

Stable Diffusion 3's MMDiT unpatchifies with `einsum("nhwpqc->nchpwq", x)` over [1, 16, 16, 2, 2, 4]:
five axes after the batch, which the Einsum lowering (Permutes on what ncnn holds) refuses. As a
Transpose it meets the passes that fit wide tensors in ncnn's 4 axes (split_wide_transposes and
merge_wide_axes: the Reshapes around it keep h, p and w, q together). Exact: values are only moved.
One walk.
"""
from __future__ import annotations

from converter.shapes.einsum_equation import parse_equation
from converter.ir import Graph, Node


def _permutation(graph: Graph, node: Node) -> list[int] | None:
    rank = graph.tensors[node.inputs[0]].rank
    if len(node.inputs) != 1 or rank is None:
        return None
    try:
        (term,), out = parse_equation(node.attrs["equation"], [rank])
    except ValueError:
        return None
    if len(set(term)) != len(term) or sorted(term) != sorted(out):
        return None
    return [term.index(c) for c in out]


def convert_einsum_transpose(graph: Graph) -> dict:
    converted = 0
    for node in graph.onnx_nodes_of("Einsum"):
        perm = _permutation(graph, node)
        if perm is None:
            continue
        graph.remove_node(node)
        graph.add_node(Node(node.name, "Transpose", list(node.inputs), list(node.outputs), {"perm": perm},
                            origin=node.origin or node.name))
        converted += 1
    return {"einsums_as_transposes": converted}
