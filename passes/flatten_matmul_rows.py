"""Run a MatMul of a batch of matrices by a constant (K, N) weight as one product of all their rows:

    y = A W [+ b]        A (..., M, K) an ncnn 3-D or 4-D blob, b one value per column
 -> y = Reshape(Reshape(A, (rows, K)) W [+ b], (..., M, N))

Lowered as it is, ncnn's MatMul layer reads W from a MemoryData blob and the bias is a BinaryOp;
the rows as one 2-D blob lower to an InnerProduct that convert_innerproduct_gemm makes a Gemm with
W (and b, fuse_innerproduct_bias) as constants. x86 pip runtime (1.0.20261020), one thread: MatMul +
bias 8.3 us against Reshape + Gemm + Reshape 7.1 us at (4, 4, 16) x (16, 16), 10.9 against 9.5 at
(4, 16, 32) x (32, 64), 26.9 against 21.3 at (4, 16, 96) x (96, 192), a tie at (4, 64, 64) x (64, 128)
(hf_mobilevit's transformer runs over its 4 patch positions as a batch). Static shapes only (the
Reshape back needs the leading extents); int8-planned MatMuls stay. One walk.
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node, Tensor
from converter.rewrite.patterns import other, sole_reader


def _bias(graph: Graph, name: str, n: int) -> tuple[Node, np.ndarray] | None:
    """(the Add, its N values) when `name`'s only reader adds a constant that varies only along N."""
    add = sole_reader(graph, name, "Add")
    const = None if add is None else other(add, name)
    value = None if const is None else graph.value(const)
    if (value is None or value.dtype != np.float32 or value.size != n or value.shape[-1] != n
            or graph.tensors[add.outputs[0]].shape != graph.tensors[name].shape):
        return None
    return add, value.reshape(n)


def _new(graph: Graph, stem: str, shape: tuple) -> str:
    return graph.add_tensor(Tensor(graph.fresh_name(stem), shape, np.dtype(np.float32))).name


def flatten_matmul_rows(graph: Graph) -> dict:
    flattened = 0
    for node in graph.onnx_nodes_of("MatMul"):
        if node.name in graph.int8_plans:
            continue
        a, out = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
        w = graph.value(node.inputs[1])
        if (w is None or w.ndim != 2 or w.dtype != np.float32 or a.shape is None or None in a.shape
                or a.rank < 3 or len(a.ncnn_shape) not in (3, 4) or a.dtype != np.float32
                or out.shape != (*a.shape[:-1], w.shape[1])):
            continue
        k, n = w.shape
        rows = int(np.prod(a.shape[:-1]))
        bias = _bias(graph, out.name, n)
        final = bias[0].outputs[0] if bias else out.name
        flat_in, flat_out = _new(graph, f"{a.name}_rows", (rows, k)), _new(graph, f"{out.name}_rows", (rows, n))
        to_rows = graph.add_constant(f"{node.name}_rows_shape", np.array([rows, k], np.int64)).name
        back = graph.add_constant(f"{node.name}_back_shape", np.array(out.shape, np.int64)).name
        new = [Node(graph.fresh_name(f"{node.name}_rows"), "Reshape", [a.name, to_rows], [flat_in]),
               Node(node.name, "MatMul", [flat_in, node.inputs[1]], [flat_out], origin=node.origin)]
        if bias:
            biased = _new(graph, f"{final}_rows", (rows, n))
            b = graph.add_constant(f"{bias[0].name}_row_bias", bias[1]).name
            new.append(Node(bias[0].name, "Add", [flat_out, b], [biased], origin=bias[0].origin))
            flat_out = biased
            graph.remove_node(bias[0])
        new.append(Node(graph.fresh_name(f"{node.name}_back"), "Reshape", [flat_out, back], [final]))
        graph.replace_nodes([node], new)
        flattened += 1
    if flattened:
        graph.remove_unused_tensors()
    return {"matmul_rows_flattened": flattened}
