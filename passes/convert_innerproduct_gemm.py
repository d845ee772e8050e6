"""Turn an InnerProduct over the rows of a 2-D blob into a Gemm with constant B (and bias as C).

Both compute y[m] = W x[m] + b per row in fp32. The x86 runtime (1.0.20261020) runs InnerProduct on
a 2-D blob row by row: 8.8 ms against Gemm's 1.1 ms for 197x192 @ 192x768 on one thread (a ViT's
MLP), while for a 17x32 @ 32x64 product they tie. So every row-wise InnerProduct without a fused
activation or int8 becomes Gemm (transB=1: B is the InnerProduct weight as stored, N x K; C one
value per column, broadcast type 4). A 1-D input (one vector) and a single row stay InnerProducts: for
one row ncnn's InnerProduct streams its packed weights faster than Gemm (a decoder step at one token,
Qwen2.5-0.5B's projections with the weights out of cache: 0.74-1.0x onnxruntime's MatMul against Gemm's
0.85-1.07x, scripts/projection_forms.py; Gemm wins from 32 rows). So do the projections of a decoder
step that has a prompt file (decoder_layout.starts_from_prompt_file: that takes the prompt, this one token a call):
right for any row count, ncnn's fast form for the one it is fed, and its weight is the bytes the prompt
file's Gemm reads as B (N x K), so both files share one .bin; one with a bias (Qwen2's q/k/v) stays a
Gemm in both, as ncnn reads Gemm's C with a flag word and InnerProduct's bias without one. One walk.
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph
from converter.ncnn_side.layers import SPECS
from converter.shapes.decoder_layout import starts_from_prompt_file

BROADCAST_PER_COLUMN = 4
NO_C = -1


def convert_innerproduct_gemm(graph: Graph) -> dict:
    one_row_a_call = starts_from_prompt_file(graph.inputs, graph.outputs)
    converted = 0
    for node in graph.topological():
        if not node.ncnn or node.op != "InnerProduct" or len(node.inputs) != 1:
            continue
        p = SPECS["InnerProduct"].resolve(node.params)
        shape = graph.tensors[node.inputs[0]].ncnn_shape
        if p.activation_type or p.int8_scale_term or shape is None or len(shape) != 2 or shape[0] == 1 \
                or one_row_a_call and not p.bias_term:
            continue
        n = p.num_output
        k = p.weight_data_size // max(n, 1)
        if k != shape[1]:
            continue
        weights = [np.asarray(node.weights[0], np.float32).reshape(n, k)]
        if p.bias_term:
            weights.append(np.asarray(node.weights[1], np.float32).reshape(n))
        node.op = "Gemm"
        node.params = {2: 0, 3: 1, 4: 0, 5: 1, 6: 1, 7: shape[0] or 0, 8: n, 9: k,
                       10: BROADCAST_PER_COLUMN if p.bias_term else NO_C}
        node.weights = weights
        converted += 1
    return {"gemm_converted": converted}
