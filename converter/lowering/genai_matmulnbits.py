"""com.microsoft MatMulNBits (weight-only block quantization, onnxruntime-genai's int4/int8 models)
-> ncnn Gemm with block-quantized B (18=quantize_term), or float weights with a one-line warning.

MatMulNBits: B is N rows of K `bits`-wide unsigned values q, in blocks of block_size along K with
one scale s each and a zero point z (default 2**(bits-1)); the weight is (q - z) * s. ncnn's Gemm
(gemm.cpp) holds signed values q' and a scale s' per block of 32/64/128 and computes with q' / s'.
So q' = q - z and s' = 1 / s, exact up to the rounding of 1 / (1 / s):
- 4-bit, every z = 8: 4-bit q' in [-8, 7];
- 4-bit with other zero points: q' in [-15, 15] fits 6 bits (ncnn's 6-bit Gemm multiplies float
  activations, measured);
- blocks of 256, 512, ...: blocks of 128 sharing a scale.
Elsewhere the weights are dequantized to float32 (8-bit: ncnn's 8-bit Gemm quantizes the
activations to int8 per block, measured, which onnxruntime does only at accuracy_level 4;
blocks of 16; a g_idx), with a warning. The float path is ONNX MatMul's lowering.
"""
from __future__ import annotations

import numpy as np

from converter.ncnn_side.gemm_block_quant import pack, quantize_term
from ..ir import Graph, Node
from . import LOWERINGS, lowers
from .common import constant, fail, layer, new_tensor, optional_constant, reshape_layer


def unpacked(node: Node, graph: Graph) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """q (N, K) as unsigned ints, zero points (N, blocks) and scales (N, blocks)."""
    k, n, bits, block = (int(node.attrs[a]) for a in ("K", "N", "bits", "block_size"))
    blocks = -(-k // block)
    raw = constant(graph, node, 1, "the quantized weight B").astype(np.uint8).reshape(n, -1)
    if bits == 8:
        q = raw.astype(np.int32)
    elif bits in (2, 4):
        per = 8 // bits
        q = np.stack([(raw >> (bits * i)) & ((1 << bits) - 1) for i in range(per)], axis=-1)
        q = q.reshape(n, -1).astype(np.int32)
    else:
        raise fail(node, graph, f"{bits}-bit weights; MatMulNBits packs 2, 4 or 8 bits")
    q = q[:, :blocks * block][:, :k]
    scales = constant(graph, node, 2, "scales").astype(np.float32).reshape(n, blocks)
    zp = optional_constant(graph, node, 3, "zero points")
    if zp is None:
        zeros = np.full((n, blocks), 1 << (bits - 1), np.float32)
    elif zp.dtype == np.uint8:           # packed like B, rows padded to whole bytes
        per = 8 // bits
        packed = zp.reshape(n, -1)
        zeros = np.stack([(packed >> (bits * i)) & ((1 << bits) - 1) for i in range(per)], axis=-1)
        zeros = zeros.reshape(n, -1)[:, :blocks].astype(np.float32)
    else:                                # float zero points (in units of q)
        zeros = zp.astype(np.float32).reshape(n, blocks)
    return q, zeros, scales


def _same_packing(graph: Graph, node: Node) -> list[Node] | None:
    """The common case without unpacking (a 0.5B model's lm_head would take GBs of temporaries):
    4-bit, zero points the default 8, whole blocks of 32/64/128, no g_idx, a 2-D input. ONNX and
    ncnn then pack alike (low nibble first, rows of K); q - 8 flips each nibble's top bit."""
    k, n, bits, block = (int(node.attrs[a]) for a in ("K", "N", "bits", "block_size"))
    a, out = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    extra = [i for i in node.inputs[3:5] if i]
    if bits != 4 or block not in (32, 64, 128) or k % block or extra or len(a.ncnn_shape) != 2:
        return None
    raw = constant(graph, node, 1, "the quantized weight B")
    scales = constant(graph, node, 2, "scales").astype(np.float32).reshape(n, k // block)
    bias = optional_constant(graph, node, 5, "bias")
    signed = (np.asarray(raw, np.uint8).reshape(n, k // 2) ^ np.uint8(0x88)).view(np.int8)
    params = {2: 0, 3: 1, 4: 0, 5: 1, 6: int(bias is not None), 7: 0, 8: n, 9: k,
              10: 4 if bias is not None else 0, 18: quantize_term(4, block)}
    weights = [np.zeros(1, np.float32)] + ([bias.astype(np.float32)] if bias is not None else []) + \
        [(np.float32(1) / scales).astype(np.float32)]
    gemm = layer(node, graph, "Gemm", [a.name], [out.name], params, weights=weights)
    gemm.weights[0] = signed
    return [gemm]


def _ncnn_form(q, zeros, bits: int, block: int):
    """(ncnn bits, ncnn block, block repeat) where ncnn's Gemm computes the same, else None."""
    if bits != 4 or not np.array_equal(zeros, np.round(zeros)):
        return None
    if block in (32, 64, 128):
        ncnn_block, repeat = block, 1
    elif block > 128 and block % 128 == 0:
        ncnn_block, repeat = 128, block // 128
    else:
        return None
    return (4 if np.all(zeros == 8) else 6), ncnn_block, repeat


@lowers("MatMulNBits")
def matmul_nbits(graph: Graph, node: Node) -> list[Node]:
    k, n, bits, block = (int(node.attrs[a]) for a in ("K", "N", "bits", "block_size"))
    a, out = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    if a.shape is None or a.shape[-1] != k:
        raise fail(node, graph, f"input '{a.name}' of shape {a.shape} does not end in K={k}")
    fast = _same_packing(graph, node)
    if fast is not None:
        return fast
    q, zeros, scales = unpacked(node, graph)
    g_idx = optional_constant(graph, node, 4, "g_idx")
    bias = optional_constant(graph, node, 5, "bias")
    trivial_groups = g_idx is None or np.array_equal(np.asarray(g_idx).ravel()[:k], np.arange(k) // block)
    form = _ncnn_form(q, zeros, bits, block) if trivial_groups else None
    if form is None or len(a.ncnn_shape) not in (1, 2):
        why = ("a g_idx" if not trivial_groups else
               f"a {len(a.ncnn_shape)}-D input" if form is not None else
               f"{bits}-bit weights in blocks of {block}" + (" with zero points" if bits == 4 else ""))
        graph.warnings.append(f"{node.describe()}: {why} have no exact ncnn Gemm block quantization; "
                              f"its weights are dequantized to float32 ({4 * k * n / 1e6:.1f} MB)")
        return _float(graph, node, q, zeros, scales, block, bias)
    ncnn_bits, ncnn_block, repeat = form
    signed = q - zeros.astype(np.int32).repeat(block, axis=1)[:, :k]
    inverse = (np.float32(1) / np.repeat(scales, repeat, axis=1)[:, :-(-k // ncnn_block)]).astype(np.float32)
    params = {2: 0, 3: 1, 4: 0, 5: 1, 6: int(bias is not None), 7: 0, 8: n, 9: k,
              10: 4 if bias is not None else 0, 18: quantize_term(ncnn_bits, ncnn_block)}
    weights = [np.zeros(1, np.float32)] + ([bias.astype(np.float32)] if bias is not None else []) + [inverse]
    two_d = len(a.ncnn_shape) == 2
    target = out.name if two_d else new_tensor(graph, f"{out.name}_rows", (1, n), None)
    gemm = layer(node, graph, "Gemm", [a.name], [target], params, weights=weights)
    gemm.weights[0] = pack(signed, ncnn_bits)            # raw packed bytes, kept int8
    if two_d:
        return [gemm]
    return [gemm, reshape_layer(graph, node, target, out.name, {}, suffix="_vector")]


def _float(graph: Graph, node: Node, q, zeros, scales, block: int, bias) -> list[Node]:
    k = q.shape[1]
    w = ((q - zeros.repeat(block, axis=1)[:, :k]) * scales.repeat(block, axis=1)[:, :k]).astype(np.float32)
    weight = graph.add_constant(f"{node.name}_dequantized", np.ascontiguousarray(w.T)).name
    out = node.outputs[0]
    mm_out = out if bias is None else new_tensor(graph, f"{out}_nobias", graph.tensors[out].shape,
                                                 graph.tensors[out].batch_axis)
    origin = node.origin or node.name
    layers = LOWERINGS["MatMul"](graph, Node(f"{node.name}_matmul", "MatMul", [node.inputs[0], weight],
                                             [mm_out], {}, origin=origin))
    if bias is not None:
        b = graph.add_constant(f"{node.name}_bias", bias.astype(np.float32)).name
        layers += LOWERINGS["Add"](graph, Node(f"{node.name}_add_bias", "Add", [mm_out, b], [out], {},
                                               origin=origin))
    return layers


@lowers("GatherBlockQuantized")
def gather_block_quantized(graph: Graph, node: Node) -> list[Node]:
    """com.microsoft GatherBlockQuantized (the builder's int4 embedding, sharing the tied lm_head's
    MatMulNBits weights): rows of a 4/8-bit table quantized in blocks along its last axis. ncnn's
    Embed has no block quantization: the table is dequantized to float32 (with a warning) and
    gathered by ONNX Gather's lowering (an Embed)."""
    bits, block = int(node.attrs.get("bits", 4)), int(node.attrs.get("block_size", 128))
    if int(node.attrs.get("gather_axis", 0)) != 0 or int(node.attrs.get("quantize_axis", 1)) not in (1, -1):
        raise fail(node, graph, "only a table gathered by rows and quantized along its columns is supported")
    data = constant(graph, node, 0, "the quantized table")
    if data.ndim != 2 or data.dtype != np.uint8 or bits not in (4, 8):
        raise fail(node, graph, f"a {data.ndim}-D {data.dtype} table of {bits}-bit values; only 2-D uint8 "
                                "packs of 4 or 8 bits are supported")
    per = 8 // bits
    scales = constant(graph, node, 2, "scales").astype(np.float32)
    zp = optional_constant(graph, node, 3, "zero points")
    rows, width = data.shape[0], data.shape[1] * per
    table = np.empty((rows, width), np.float32)
    for r in range(0, rows, 4096):      # in slices of rows: a 150k-word table's temporaries stay small
        part = data[r:r + 4096]
        q = np.stack([(part >> (bits * i)) & ((1 << bits) - 1) for i in range(per)], axis=-1)
        q = q.reshape(part.shape[0], -1).astype(np.float32)
        if zp is None:
            zeros = np.float32(1 << (bits - 1))
        else:
            z = zp[r:r + 4096]
            zq = np.stack([(z >> (bits * i)) & ((1 << bits) - 1) for i in range(per)], axis=-1) \
                if zp.dtype == np.uint8 else z[..., None]
            zeros = zq.reshape(z.shape[0], -1)[:, :scales.shape[1]].astype(np.float32).repeat(block, axis=1)[:, :width]
        table[r:r + 4096] = (q - zeros) * scales[r:r + 4096].repeat(block, axis=1)[:, :width]
    graph.warnings.append(f"{node.describe()}: ncnn's Embed has no block quantization; the table is dequantized "
                          f"to float32 ({table.nbytes / 1e6:.0f} MB)")
    name = graph.add_constant(f"{node.name}_table", table).name
    return LOWERINGS["Gather"](graph, Node(f"{node.name}_gather", "Gather", [name, node.inputs[1]], list(node.outputs),
                                           {"axis": 0}, origin=node.origin or node.name))
