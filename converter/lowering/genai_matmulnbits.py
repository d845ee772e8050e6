"""com.microsoft MatMulNBits (weight-only block quantization, onnxruntime-genai's int4/int8 models)
-> ncnn Gemm, in the form graph.block_quant chooses (convert --block-quant, BLOCK_QUANT_MODES):
- "int8" (default): weights requantized to int8 with one scale per output channel, ncnn's int8 Gemm
  (18=2; its optimized kernels on x86 and ARM) and a BinaryOp applying the channel scales; the Gemm
  quantizes each row of activations to int8 when it runs. Projection weights 1.6x their 4-bit size (8
  bits against 4 + a float scale per 32), fast, within a stated deviation of onnxruntime (below).
- "dequantize": float32 weights, the float Gemm: exact, 6.4x the 4-bit size.
- "keep": the blocks as they are, Gemm's weight-only block quantization (below): exact and smallest,
  but ncnn runs it as a reference loop (~20x slower than the float Gemm at 896x896).
The int8 deviation: each weight moves by at most half a step of its channel's int8 grid (absmax / 254,
1/16 of a 4-bit block step where the row's largest block sets it) and each activation by half a step
of its row's (absmax / 254); onnxruntime's own CPU default for these models (accuracy_level 4) also
quantizes activations to int8, per block. Measured: logits within 1.2-1.4e-2 of their largest magnitude
over 32 tokens of the committed models (tests/decoders), 2.0e-2 at Qwen2.5-0.5B's shape (random weights,
scripts/bench_decoder.py).

"keep":

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
from converter.ncnn_side.int8_rounding import float2int8
from ..ir import Graph, Node
from . import LOWERINGS, lowers
from .common import constant, fail, layer, new_tensor, optional_constant, reshape_layer


BLOCK_QUANT_MODES = ("int8", "dequantize", "keep")
ROWS = 4096         # rows unpacked at a time: a 150k-word lm_head's temporaries stay small
NOTES = {
    "int8": "MatMulNBits weights as int8 Gemm (--block-quant int8): 1.6x their 4-bit size, ncnn's fast int8 "
            "kernels, activations quantized per row (logits within about 2e-2 of their scale from onnxruntime's); "
            "--block-quant keep for the exact 4-bit blocks (smallest, ~20x slower Gemm)",
    "dequantize": "MatMulNBits weights dequantized to float32 (--block-quant dequantize): exact and fast, "
                  "6.4x their 4-bit size; --block-quant int8 is 1.6x",
    "keep": "MatMulNBits blocks kept (--block-quant keep): exact and smallest, but ncnn runs block-quantized "
            "Gemm as a reference loop (~20x slower than float); --block-quant int8 is fast at 1.6x the size",
}


def _note(graph: Graph, mode: str) -> None:
    if NOTES[mode] not in graph.notes:
        graph.notes.append(NOTES[mode])


def unpacked(node: Node, graph: Graph, rows: slice = slice(None)) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """q (N, K) as unsigned ints, zero points (N, blocks) and scales (N, blocks), of `rows` only."""
    k, n, bits, block = (int(node.attrs[a]) for a in ("K", "N", "bits", "block_size"))
    blocks = -(-k // block)
    raw = constant(graph, node, 1, "the quantized weight B").reshape(n, -1)[rows].astype(np.uint8)
    n = raw.shape[0]
    if bits == 8:
        q = raw.astype(np.int32)
    elif bits in (2, 4):
        per = 8 // bits
        q = np.stack([(raw >> (bits * i)) & ((1 << bits) - 1) for i in range(per)], axis=-1)
        q = q.reshape(n, -1).astype(np.int32)
    else:
        raise fail(node, graph, f"{bits}-bit weights; MatMulNBits packs 2, 4 or 8 bits")
    q = q[:, :blocks * block][:, :k]
    scales = constant(graph, node, 2, "scales").reshape(-1, blocks)[rows].astype(np.float32)
    zp = optional_constant(graph, node, 3, "zero points")
    if zp is None:
        zeros = np.full((n, blocks), 1 << (bits - 1), np.float32)
    elif zp.dtype == np.uint8:           # packed like B, rows padded to whole bytes
        per = 8 // bits
        packed = zp.reshape(-1, zp.size // int(node.attrs["N"]))[rows]
        zeros = np.stack([(packed >> (bits * i)) & ((1 << bits) - 1) for i in range(per)], axis=-1)
        zeros = zeros.reshape(n, -1)[:, :blocks].astype(np.float32)
    else:                                # float zero points (in units of q)
        zeros = zp.astype(np.float32).reshape(-1, blocks)[rows]
    return q, zeros, scales


def dequantized(node: Node, graph: Graph, rows: slice = slice(None)) -> np.ndarray:
    """The weight (rows of N, K) in float32: (q - zero) * scale of each value's block (or g_idx group)."""
    q, zeros, scales = unpacked(node, graph, rows)
    k, block = q.shape[1], int(node.attrs["block_size"])
    g_idx = optional_constant(graph, node, 4, "g_idx")
    groups = np.arange(k) // block if g_idx is None else np.asarray(g_idx, np.int64).ravel()[:k]
    return ((q - zeros[:, groups]) * scales[:, groups]).astype(np.float32)


def _row_chunks(node: Node):
    n = int(node.attrs["N"])
    return [slice(r, min(r + ROWS, n)) for r in range(0, n, ROWS)]


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
    k = int(node.attrs["K"])
    a = graph.tensors[node.inputs[0]]
    if a.shape is not None and a.shape and a.shape[-1] is None:
        # MatMulNBits reads rows of K (onnxruntime refuses others): a last extent that shape inference left
        # unknown is K (onnxruntime's quantizer on a torch.onnx export: o_proj reads a Reshape to (B, T, -1))
        a.shape = (*a.shape[:-1], k)
    if a.shape is None or a.shape[-1] != k:
        raise fail(node, graph, f"input '{a.name}' of shape {a.shape} does not end in K={k}")
    mode = graph.block_quant
    if mode == "keep":
        return _kept(graph, node)
    if len(a.ncnn_shape) not in (1, 2):
        graph.warnings.append(f"{node.describe()}: a {len(a.ncnn_shape)}-D input; ncnn's int8 Gemm takes rows, "
                              f"the weights are dequantized to float32 ({4 * k * int(node.attrs['N']) / 1e6:.1f} MB)")
        mode = "dequantize"
    _note(graph, mode)
    bias = optional_constant(graph, node, 5, "bias")
    return _int8(graph, node, bias) if mode == "int8" else _float(graph, node, bias)


def _kept(graph: Graph, node: Node) -> list[Node]:
    """Gemm's weight-only block quantization where it computes the same, else float32 with a warning."""
    k, n, bits, block = (int(node.attrs[a]) for a in ("K", "N", "bits", "block_size"))
    a, out = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    fast = _same_packing(graph, node)
    if fast is not None:
        _note(graph, "keep")
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
        return _float(graph, node, bias)
    _note(graph, "keep")
    ncnn_bits, ncnn_block, repeat = form
    signed = q - zeros.astype(np.int32).repeat(block, axis=1)[:, :k]
    inverse = (np.float32(1) / np.repeat(scales, repeat, axis=1)[:, :-(-k // ncnn_block)]).astype(np.float32)
    params = {2: 0, 3: 1, 4: 0, 5: 1, 6: int(bias is not None), 7: 0, 8: n, 9: k,
              10: 4 if bias is not None else 0, 18: quantize_term(ncnn_bits, ncnn_block)}
    weights = [np.zeros(1, np.float32)] + ([bias.astype(np.float32)] if bias is not None else []) + [inverse]
    return _rows_gemm(graph, node, params, weights, pack(signed, ncnn_bits))   # raw packed bytes, kept int8


def _rows_gemm(graph: Graph, node: Node, params: dict, weights: list, b: np.ndarray) -> list[Node]:
    """A Gemm over the input's rows with constant B `b` (int8 kept as such), reshaped back for a 1-D input."""
    a, out = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    two_d = len(a.ncnn_shape) == 2
    target = out.name if two_d else new_tensor(graph, f"{out.name}_rows", (1, int(node.attrs["N"])), None)
    gemm = layer(node, graph, "Gemm", [a.name], [target], params, weights=weights)
    gemm.weights[0] = b
    if two_d:
        return [gemm]
    return [gemm, reshape_layer(graph, node, target, out.name, {}, suffix="_vector")]


def _int8(graph: Graph, node: Node, bias) -> list[Node]:
    """Per output channel int8 weights (scale 127 / the row's largest magnitude, float2int8 as ncnn's
    quantize_to_int8) in an int8 Gemm (18=2, B scale 1), then a multiply by 1 / each channel's scale;
    the bias enters the Gemm as C = bias * scale so that the multiply gives it back."""
    k, n = int(node.attrs["K"]), int(node.attrs["N"])
    q8, scales = np.empty((n, k), np.int8), np.empty(n, np.float32)
    for rows in _row_chunks(node):
        w = dequantized(node, graph, rows)
        absmax = np.abs(w).max(axis=1)
        scales[rows] = np.where(absmax == 0, 1, np.float32(127) / np.where(absmax == 0, 1, absmax))
        q8[rows] = float2int8(w, scales[rows, None]).astype(np.int8)
    params = {2: 0, 3: 1, 4: 0, 5: 1, 6: int(bias is not None), 7: 0, 8: n, 9: k,
              10: 4 if bias is not None else 0, 18: 2}
    c = [(bias.astype(np.float32) * scales).astype(np.float32)] if bias is not None else []
    out = node.outputs[0]
    unscaled = new_tensor(graph, f"{out}_int8", graph.tensors[out].shape, graph.tensors[out].batch_axis)
    inner = Node(node.name, node.op, [node.inputs[0]], [unscaled], node.attrs, origin=node.origin or node.name)
    layers = _rows_gemm(graph, inner, params, [np.zeros(1, np.int8)] + c + [np.ones(1, np.float32)], q8)
    descale = graph.add_constant(f"{node.name}_channel_scales", (np.float32(1) / scales).astype(np.float32)).name
    return layers + LOWERINGS["Mul"](graph, Node(f"{node.name}_descale", "Mul", [unscaled, descale], [out], {},
                                                 origin=node.origin or node.name))


def _float(graph: Graph, node: Node, bias) -> list[Node]:
    k, n = int(node.attrs["K"]), int(node.attrs["N"])
    w = np.empty((n, k), np.float32)                   # filled a slice of rows at a time
    for rows in _row_chunks(node):
        w[rows] = dequantized(node, graph, rows)
    # MatMul's (K, N) as a view of the rows InnerProduct and Gemm write: the .bin is written without a copy
    weight = graph.add_constant(f"{node.name}_dequantized", w.T).name
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
