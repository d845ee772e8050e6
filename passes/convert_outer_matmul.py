"""A MatMul whose inner extent is 1, (..., M, 1) x (..., 1, N), is a broadcast product: Mul.

Each output element is one product a[m] * b[n], no sum, so the Mul computes the same numbers exactly.
Hugging Face's rotary embedding as transformers 4 writes it (`inv_freq[None, :, None] @
position_ids[:, None, :]`, optimum's exports) is this: ncnn's MatMul would take it as a matrix product
over one column, a Gemm-shaped layer for what is one BinaryOp (transformers 5 writes the Mul itself).
Both operands of rank >= 2 (MatMul's batch axes broadcast as Mul's do then). One walk over the MatMuls.
"""
from __future__ import annotations

from converter.ir import Graph, Node


def _outer(graph: Graph, node: Node) -> bool:
    a, b = (graph.tensors[i] for i in node.inputs)
    return not node.ncnn and a.shape is not None and b.shape is not None and a.rank >= 2 and b.rank >= 2 \
        and a.shape[-1] == 1 and b.shape[-2] == 1


def convert_outer_matmul(graph: Graph) -> dict:
    converted = 0
    for node in [n for n in graph.onnx_nodes_of("MatMul") if _outer(graph, n)]:
        graph.replace_nodes([node], [Node(node.name, "Mul", list(node.inputs), list(node.outputs),
                                          origin=node.origin or node.name)])
        converted += 1
    return {"outer_matmuls_converted": converted}
