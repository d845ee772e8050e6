"""ncnn layer specs: param ids, names, defaults and weight layout, in one place.

The writer, the reader and the interpreter all read these. Facts come from
ncnn's docs/developer-guide/operators.md and the layers' load_param /
load_model. A default given as a string names another param whose value it
copies (ncnn's `kernel_h` defaults to `kernel_w`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

from converter.ncnn_side.gemm_block_quant import block_scale_count, input_scaled_b, int8_gemm, packed_b, packed_k_bytes

INT, FLOAT, INTS, FLOATS, STR = "int", "float", "ints", "floats", "str"
FP16_FLAG = 0x01306B47
INT8_FLAG = 0x000D4B38      # a flagged weight stored as int8 (modelbin.cpp)


@dataclass(frozen=True)
class ParamSpec:
    id: int
    name: str
    kind: str
    default: Any


@dataclass(frozen=True)
class WeightSpec:
    name: str
    count: Callable[["Params"], int]       # number of scalars, from the resolved params
    # stored after a type tag (fp32/fp16/...), like ncnn's ModelBin::load type 0; a function
    # of the params where a param chooses (MemoryData's load_type)
    flagged: bool | Callable[["Params"], bool] = False
    present: Callable[["Params"], bool] = lambda p: True
    raw: str = "<f4"        # an untagged buffer's type ("i1": Gemm's packed block-quantized B)

    def tagged(self, params: "Params") -> bool:
        return self.flagged(params) if callable(self.flagged) else self.flagged


class Params(dict):
    """Resolved params: every spec param by name, defaults filled in; attribute access."""

    __getattr__ = dict.__getitem__


@dataclass(frozen=True)
class LayerSpec:
    type: str
    params: tuple[ParamSpec, ...] = ()
    weights: tuple[WeightSpec, ...] = ()
    by_id: dict[int, ParamSpec] = field(default_factory=dict, compare=False)

    def __post_init__(self):
        self.by_id.update({p.id: p for p in self.params})

    def resolve(self, given: dict[int, Any]) -> Params:
        """Params by name, with ncnn's defaults for the ids not given."""
        out = Params()
        for p in self.params:
            if p.id in given:
                out[p.name] = given[p.id]
        for p in self.params:
            if p.name not in out:
                out[p.name] = out[p.default] if isinstance(p.default, str) and p.kind != STR else p.default
        return out

    def weight_layout(self, given: dict[int, Any]) -> list[WeightSpec]:
        """The weights present for these params, in .bin order."""
        p = self.resolve(given)
        return [w for w in self.weights if w.present(p)]


SPECS: dict[str, LayerSpec] = {}


def layer(type_: str, *params: tuple, weights: tuple[WeightSpec, ...] = ()) -> None:
    SPECS[type_] = LayerSpec(type_, tuple(ParamSpec(*p) for p in params), weights)


def _numel(*names: str) -> Callable[[Params], int]:
    return lambda p: math.prod(max(int(p[name]), 1) for name in names)


_has_bias = lambda p: bool(p.bias_term)  # noqa: E731
_ACTIVATION = ((9, "activation_type", INT, 0), (10, "activation_params", FLOATS, ()))
_CONV_GEOMETRY = (
    (0, "num_output", INT, 0), (1, "kernel_w", INT, 0), (2, "dilation_w", INT, 1),
    (3, "stride_w", INT, 1), (4, "pad_left", INT, 0), (5, "bias_term", INT, 0),
    (6, "weight_data_size", INT, 0), (8, "int8_scale_term", INT, 0), *_ACTIVATION,
    (11, "kernel_h", INT, "kernel_w"), (12, "dilation_h", INT, "dilation_w"),
    (13, "stride_h", INT, "stride_w"), (14, "pad_top", INT, "pad_left"),
    (15, "pad_right", INT, "pad_left"), (16, "pad_bottom", INT, "pad_top"),
    (18, "pad_value", FLOAT, 0.0), (19, "dynamic_weight", INT, 0),
)
_static_weight = lambda p: not p.get("dynamic_weight", 0)  # noqa: E731  (dynamic: weights are bottoms)
_CONV_WEIGHTS = (
    WeightSpec("weight", _numel("weight_data_size"), flagged=True, present=_static_weight),
    WeightSpec("bias", _numel("num_output"), present=lambda p: _has_bias(p) and _static_weight(p)),
)
# int8 layers (convolution.cpp, innerproduct.cpp load_model): after the bias, one weight scale per
# output (ConvolutionDepthWise: per group, or one for 2/102), the input blob's scale, and with
# 8 > 100 the output's requantize scale. Scales are the reciprocal of ONNX's (q = x * scale).
_int8 = lambda p: bool(p.int8_scale_term)  # noqa: E731
_INT8_TAIL = (WeightSpec("bottom_blob_int8_scales", lambda p: 1, present=_int8),
              WeightSpec("top_blob_int8_scales", lambda p: 1, present=lambda p: p.int8_scale_term > 100))
_INT8_WEIGHTS = (WeightSpec("weight_data_int8_scales", _numel("num_output"), present=_int8), *_INT8_TAIL)
_INT8_DW_WEIGHTS = (WeightSpec("weight_data_int8_scales",
                               lambda p: 1 if p.int8_scale_term in (2, 102) else max(p.group, 1),
                               present=_int8), *_INT8_TAIL)

layer("Input", (0, "w", INT, 0), (1, "h", INT, 0), (11, "d", INT, 0), (2, "c", INT, 0))
layer("MemoryData", (0, "w", INT, 0), (1, "h", INT, 0), (11, "d", INT, 0), (2, "c", INT, 0),
      (21, "load_type", INT, 1),
      # with w=h=d=c=0 ncnn reads nothing from the .bin (and holds one uninitialized value)
      weights=(WeightSpec("data", _numel("w", "h", "d", "c"), flagged=lambda p: p.load_type == 0,
                          present=lambda p: any((p.w, p.h, p.d, p.c))),))
layer("Split")
layer("Noop")
layer("Dropout", (0, "scale", FLOAT, 1.0))
layer("BinaryOp", (0, "op_type", INT, 0), (1, "with_scalar", INT, 0), (2, "b", FLOAT, 0.0))
layer("UnaryOp", (0, "op_type", INT, 0))
layer("Eltwise", (0, "op_type", INT, 0), (1, "coeffs", FLOATS, ()))
layer("ReLU", (0, "slope", FLOAT, 0.0))
layer("Clip", (0, "min", FLOAT, -3.4028234663852886e38), (1, "max", FLOAT, 3.4028234663852886e38))
layer("Sigmoid")
layer("Swish")
layer("TanH")
layer("HardSigmoid", (0, "alpha", FLOAT, 0.2), (1, "beta", FLOAT, 0.5))
layer("HardSwish", (0, "alpha", FLOAT, 0.2), (1, "beta", FLOAT, 0.5))
layer("GELU", (0, "fast_gelu", INT, 0))
layer("ELU", (0, "alpha", FLOAT, 0.1))
layer("SELU", (0, "alpha", FLOAT, 1.67326324), (1, "lambda", FLOAT, 1.050700987))
layer("Erf")
layer("PReLU", (0, "num_slope", INT, 0), weights=(WeightSpec("slope", _numel("num_slope")),))
layer("Softmax", (0, "axis", INT, 0), (1, "fixbug0", INT, 0))
layer("Convolution", *_CONV_GEOMETRY, weights=_CONV_WEIGHTS + _INT8_WEIGHTS)
# deformableconv2d.cpp: Convolution's geometry ids; no group, no int8, the weight flagged
layer("DeformableConv2D", *(g for g in _CONV_GEOMETRY[:-2] if g[0] != 8), weights=_CONV_WEIGHTS[:1] + (
    WeightSpec("bias", _numel("num_output"), present=_has_bias),))
layer("ConvolutionDepthWise", *_CONV_GEOMETRY, (7, "group", INT, 1),
      weights=_CONV_WEIGHTS + _INT8_DW_WEIGHTS)
layer("Deconvolution", *_CONV_GEOMETRY[:-2], (18, "output_pad_right", INT, 0),
      (19, "output_pad_bottom", INT, "output_pad_right"), (20, "output_w", INT, 0),
      (21, "output_h", INT, "output_w"), (28, "dynamic_weight", INT, 0), weights=_CONV_WEIGHTS)
layer("DeconvolutionDepthWise", *_CONV_GEOMETRY[:-2], (7, "group", INT, 1),
      (18, "output_pad_right", INT, 0), (19, "output_pad_bottom", INT, "output_pad_right"),
      (20, "output_w", INT, 0), (21, "output_h", INT, "output_w"), (28, "dynamic_weight", INT, 0),
      weights=_CONV_WEIGHTS)
layer("LRN", (0, "region_type", INT, 0), (1, "local_size", INT, 5), (2, "alpha", FLOAT, 1.0),
      (3, "beta", FLOAT, 0.75), (4, "bias", FLOAT, 1.0))
layer("Pooling", (0, "pooling_type", INT, 0), (1, "kernel_w", INT, 0), (2, "stride_w", INT, 1),
      (3, "pad_left", INT, 0), (4, "global_pooling", INT, 0), (5, "pad_mode", INT, 0),
      (6, "avgpool_count_include_pad", INT, 0), (7, "adaptive_pooling", INT, 0),
      (8, "out_w", INT, 0), (11, "kernel_h", INT, "kernel_w"), (12, "stride_h", INT, "stride_w"),
      (13, "pad_top", INT, "pad_left"), (14, "pad_right", INT, "pad_left"),
      (15, "pad_bottom", INT, "pad_top"), (18, "out_h", INT, "out_w"))
layer("InnerProduct", (0, "num_output", INT, 0), (1, "bias_term", INT, 0),
      (2, "weight_data_size", INT, 0), (8, "int8_scale_term", INT, 0), *_ACTIVATION,
      weights=(WeightSpec("weight", _numel("weight_data_size"), flagged=True),
               WeightSpec("bias", _numel("num_output"), present=_has_bias), *_INT8_WEIGHTS))
layer("MatMul", (0, "transB", INT, 0))
layer("BatchNorm", (0, "channels", INT, 0), (1, "eps", FLOAT, 0.0),
      weights=tuple(WeightSpec(n, _numel("channels")) for n in ("slope", "mean", "variance", "bias")))
layer("LayerNorm", (0, "affine_size", INT, 0), (1, "eps", FLOAT, 0.001), (2, "affine", INT, 1),
      weights=tuple(WeightSpec(n, _numel("affine_size"), present=lambda p: bool(p.affine))
                    for n in ("gamma", "beta")))
layer("InstanceNorm", (0, "channels", INT, 0), (1, "eps", FLOAT, 0.001), (2, "affine", INT, 1),
      weights=tuple(WeightSpec(n, _numel("channels"), present=lambda p: bool(p.affine))
                    for n in ("gamma", "beta")))
layer("GroupNorm", (0, "group", INT, 1), (1, "channels", INT, 0), (2, "eps", FLOAT, 0.001),
      (3, "affine", INT, 1),
      weights=tuple(WeightSpec(n, _numel("channels"), present=lambda p: bool(p.affine))
                    for n in ("gamma", "beta")))
layer("Concat", (0, "axis", INT, 0))
layer("Slice", (0, "slices", INTS, ()), (1, "axis", INT, 0), (2, "indices", INTS, ()))
layer("Crop", (0, "woffset", INT, 0), (1, "hoffset", INT, 0), (13, "doffset", INT, 0),
      (2, "coffset", INT, 0), (3, "outw", INT, 0), (4, "outh", INT, 0), (14, "outd", INT, 0),
      (5, "outc", INT, 0), (6, "woffset2", INT, 0), (7, "hoffset2", INT, 0),
      (15, "doffset2", INT, 0), (8, "coffset2", INT, 0), (9, "starts", INTS, ()),
      (10, "ends", INTS, ()), (11, "axes", INTS, ()),
      (19, "starts_expr", STR, ""), (20, "ends_expr", STR, ""), (21, "axes_expr", STR, ""))
layer("Reshape", (0, "w", INT, -233), (1, "h", INT, -233), (11, "d", INT, -233),
      (2, "c", INT, -233), (6, "shape_expr", STR, ""),
      # recent ncnn (NCNN_BATCH): where the batch axis sits in the input / output shape
      (12, "input_batch_axis", INT, 233), (13, "output_batch_axis", INT, 233))
layer("Flatten")
layer("Permute", (0, "order_type", INT, 0))
layer("Padding", (0, "top", INT, 0), (1, "bottom", INT, 0), (2, "left", INT, 0),
      (3, "right", INT, 0), (4, "type", INT, 0), (5, "value", FLOAT, 0.0),
      (6, "per_channel_pad_data_size", INT, 0), (7, "front", INT, 0), (8, "behind", INT, 0),
      weights=(WeightSpec("per_channel_pad_data", _numel("per_channel_pad_data_size"),
                          present=lambda p: p.per_channel_pad_data_size > 0),))
layer("PixelShuffle", (0, "upscale_factor", INT, 1), (1, "mode", INT, 0))
layer("Reorg", (0, "stride", INT, 1), (1, "mode", INT, 0))
layer("Interp", (0, "resize_type", INT, 0), (1, "height_scale", FLOAT, 1.0),
      (2, "width_scale", FLOAT, 1.0), (3, "output_height", INT, 0), (4, "output_width", INT, 0),
      (5, "dynamic_target_size", INT, 0), (6, "align_corner", INT, 0), (9, "size_expr", STR, ""))
layer("Reduction", (0, "operation", INT, 0), (1, "reduce_all", INT, 1), (2, "coeff", FLOAT, 1.0),
      (3, "axes", INTS, ()), (4, "keepdims", INT, 0), (5, "fixbug0", INT, 0))
# 18=quantize_term: 4xx/6xx/8xx weight-only block-quantized B, 1..399 int8 (converter/ncnn_side/gemm_block_quant.py)
layer("Gemm", (0, "alpha", FLOAT, 1.0), (1, "beta", FLOAT, 1.0), (2, "transA", INT, 0), (3, "transB", INT, 0),
      (4, "constantA", INT, 0), (5, "constantB", INT, 0), (6, "constantC", INT, 0), (7, "constantM", INT, 0),
      (8, "constantN", INT, 0), (9, "constantK", INT, 0), (10, "constant_broadcast_type_C", INT, 0),
      (11, "output_N1M", INT, 0), (12, "output_elempack", INT, 0), (13, "output_elemtype", INT, 0),
      (14, "output_transpose", INT, 0), (18, "quantize_term", INT, 0),
      weights=(WeightSpec("A", _numel("constantM", "constantK"), flagged=True, present=lambda p: bool(p.constantA)),
               WeightSpec("B", _numel("constantN", "constantK"), flagged=True, present=lambda p: p.constantB and not packed_b(p)),
               WeightSpec("B_packed", lambda p: packed_k_bytes(p) * p.constantN, raw="i1", present=packed_b),
               WeightSpec("C", lambda p: {0: 1, 1: p.constantM, 2: p.constantM, 3: p.constantM * p.constantN,
                                          4: p.constantN}[p.constant_broadcast_type_C],
                          flagged=True, present=lambda p: bool(p.constantC) and p.constant_broadcast_type_C != -1),
               WeightSpec("B_quantize_scales", block_scale_count, present=packed_b),
               WeightSpec("B_input_scales", _numel("constantK"), present=input_scaled_b),
               WeightSpec("A_int8_scales", _numel("constantM"), present=lambda p: int8_gemm(p) and p.constantA),
               WeightSpec("B_int8_scale", lambda p: 1, present=lambda p: int8_gemm(p) and p.constantB)))

# Recurrent layers (lstm.cpp, gru.cpp, rnn.cpp): every buffer is read with a type tag, one
# block per direction; gates in ncnn's order (LSTM I F O G, GRU R U N)
_directions = lambda p: 2 if p.direction == 2 else 1  # noqa: E731
layer("LSTM", (0, "num_output", INT, 0), (1, "weight_data_size", INT, 0), (2, "direction", INT, 0),
      (3, "hidden_size", INT, "num_output"), (8, "int8_scale_term", INT, 0),
      weights=(WeightSpec("weight_xc", _numel("weight_data_size"), flagged=True),
               WeightSpec("bias_c", lambda p: 4 * p.hidden_size * _directions(p), flagged=True),
               WeightSpec("weight_hc", lambda p: 4 * p.hidden_size * p.num_output * _directions(p),
                          flagged=True),
               WeightSpec("weight_hr", lambda p: p.hidden_size * p.num_output * _directions(p),
                          flagged=True, present=lambda p: p.hidden_size != p.num_output)))
layer("GRU", (0, "num_output", INT, 0), (1, "weight_data_size", INT, 0), (2, "direction", INT, 0),
      (8, "int8_scale_term", INT, 0),
      weights=(WeightSpec("weight_xc", _numel("weight_data_size"), flagged=True),
               WeightSpec("bias_c", lambda p: 4 * p.num_output * _directions(p), flagged=True),
               WeightSpec("weight_hc", lambda p: 3 * p.num_output ** 2 * _directions(p), flagged=True)))
layer("RNN", (0, "num_output", INT, 0), (1, "weight_data_size", INT, 0), (2, "direction", INT, 0),
      (8, "int8_scale_term", INT, 0),
      weights=(WeightSpec("weight_xc", _numel("weight_data_size"), flagged=True),
               WeightSpec("bias_c", lambda p: p.num_output * _directions(p), flagged=True),
               WeightSpec("weight_hc", lambda p: p.num_output ** 2 * _directions(p), flagged=True)))

# BinaryOp op_type codes (ncnn binaryop.h)
BINARY_OPS = {"add": 0, "sub": 1, "mul": 2, "div": 3, "max": 4, "min": 5, "pow": 6,
              "rsub": 7, "rdiv": 8, "rpow": 9, "atan2": 10, "ratan2": 11, "fmod": 12, "rfmod": 13,
              "logaddexp": 14, "floor_divide": 15, "rfloor_divide": 16, "remainder": 17, "rremainder": 18}
# The op whose result equals op(b, a), for swapping operands.
BINARY_REVERSED = {0: 0, 1: 7, 2: 2, 3: 8, 4: 4, 5: 5, 6: 9, 7: 1, 8: 3, 9: 6, 10: 11, 11: 10,
                   12: 13, 13: 12, 14: 14, 15: 16, 16: 15, 17: 18, 18: 17}
# Reduction operation codes (ncnn reduction.h); asum and l1 both sum |x|
REDUCTION_OPS = {"sum": 0, "asum": 1, "sumsq": 2, "mean": 3, "max": 4, "min": 5, "prod": 6, "l1": 7,
                 "l2": 8, "logsum": 9, "logsumexp": 10}
# UnaryOp op_type codes (ncnn unaryop.h)
UNARY_OPS = {"abs": 0, "neg": 1, "floor": 2, "ceil": 3, "square": 4, "sqrt": 5, "rsqrt": 6,
             "exp": 7, "log": 8, "sin": 9, "cos": 10, "tan": 11, "asin": 12, "acos": 13,
             "atan": 14, "reciprocal": 15, "tanh": 16, "log10": 17, "round": 18, "trunc": 19,
             "sign": 20, "expm1": 21, "sinh": 22, "asinh": 23, "cosh": 24, "acosh": 25, "atanh": 26,
             "log1p": 27}

# ---- attention (pnnx writes these for transformer models) ----
_MHA_EMBED = lambda p: p.embed_dim  # noqa: E731
layer("MultiHeadAttention", (0, "embed_dim", INT, 0), (1, "num_heads", INT, 1),
      (2, "weight_data_size", INT, 0), (3, "kdim", INT, "embed_dim"), (4, "vdim", INT, "embed_dim"),
      (5, "attn_mask", INT, 0), (6, "scale", FLOAT, None), (7, "kv_cache", INT, 0),
      (18, "quantize_term", INT, 0),
      weights=(WeightSpec("q_weight", _numel("weight_data_size"), flagged=True),
               WeightSpec("q_bias", _MHA_EMBED),
               WeightSpec("k_weight", _numel("embed_dim", "kdim"), flagged=True),
               WeightSpec("k_bias", _MHA_EMBED),
               WeightSpec("v_weight", _numel("embed_dim", "vdim"), flagged=True),
               WeightSpec("v_bias", _MHA_EMBED),
               WeightSpec("out_weight", _numel("weight_data_size"), flagged=True),
               WeightSpec("out_bias", lambda p: p.weight_data_size // max(p.embed_dim, 1))))
layer("SDPA", (5, "attn_mask", INT, 0), (6, "scale", FLOAT, 0.0), (7, "kv_cache", INT, 0),
      (18, "int8_scale_term", INT, 0))
layer("RotaryEmbed", (0, "interleaved", INT, 0))     # bottoms x (heads, seq, dim), cos, sin (seq, dim / 2)

# layers the ArgMax/Softplus/Tile/strided-Slice lowerings build
layer("Mish")
layer("CELU", (0, "alpha", FLOAT, 1.0))
layer("Shrink", (0, "bias", FLOAT, 0.0), (1, "lambd", FLOAT, 0.5))
layer("Tile", (0, "axis", INT, 0), (1, "tiles", INT, 1), (2, "repeats", INTS, ()))
layer("Flip", (0, "axes", INTS, ()))

# ---- embeddings and RMS norm (embed.cpp, rmsnorm.cpp) ----
# Embed reads its input blob's bits as int32 word indices (clamped to [0, input_dim)) and
# writes one row of num_output floats per word: [words] -> [num_output, words]
layer("Embed", (0, "num_output", INT, 0), (1, "input_dim", INT, 0), (2, "bias_term", INT, 0),
      (3, "weight_data_size", INT, 0), (18, "int8_scale_term", INT, 0),
      weights=(WeightSpec("weight", _numel("weight_data_size"), flagged=True),
               WeightSpec("bias", _numel("num_output"), present=_has_bias)))
# RMSNorm picks its innermost axes by affine_size as LayerNorm does
layer("RMSNorm", (0, "affine_size", INT, 0), (1, "eps", FLOAT, 0.001), (2, "affine", INT, 1),
      weights=(WeightSpec("gamma", _numel("affine_size"), present=lambda p: bool(p.affine)),))

# ---- layers the interpreter runs for files made by other converters (issue 10) ----
# CumulativeSum's axis is in numpy order (negative from the innermost); a 1-D blob ignores it
layer("CumulativeSum", (0, "axis", INT, 0))
layer("Squeeze", (0, "squeeze_w", INT, 0), (1, "squeeze_h", INT, 0), (11, "squeeze_d", INT, 0),
      (2, "squeeze_c", INT, 0), (3, "axes", INTS, ()))
layer("ExpandDims", (3, "axes", INTS, ()))
layer("Cast", (0, "type_from", INT, 0), (1, "type_to", INT, 0))
layer("GridSample", (0, "sample_type", INT, 1), (1, "padding_mode", INT, 1), (2, "align_corner", INT, 0),
      (3, "permute_fusion", INT, 0))
_FOLD_GEOMETRY = (
    (0, "num_output", INT, 0), (1, "kernel_w", INT, 0), (2, "dilation_w", INT, 1), (3, "stride_w", INT, 1),
    (4, "pad_left", INT, 0), (11, "kernel_h", INT, "kernel_w"), (12, "dilation_h", INT, "dilation_w"),
    (13, "stride_h", INT, "stride_w"), (14, "pad_top", INT, "pad_left"), (15, "pad_right", INT, "pad_left"),
    (16, "pad_bottom", INT, "pad_top"),
)
layer("Fold", *_FOLD_GEOMETRY, (20, "output_w", INT, 0), (21, "output_h", INT, "output_w"))
layer("Unfold", *_FOLD_GEOMETRY, (18, "pad_value", FLOAT, 0.0))
layer("Einsum", (0, "equation", INTS, ()))   # the equation string as character codes


def einsum_equation(text: str) -> tuple[int, ...]:
    """Einsum's param 0 value: ncnn reads the equation as an int array of character codes."""
    return tuple(ord(ch) for ch in text)

# ---- 1-D convolution and pooling (convolution1d.cpp, pooling1d.cpp, ...): pnnx's Conv1d etc.
# The input is 2-D (channels, length); pad_right has its own id in each layer
_CONV1D_GEOMETRY = (
    (0, "num_output", INT, 0), (1, "kernel_w", INT, 0), (2, "dilation_w", INT, 1), (3, "stride_w", INT, 1),
    (4, "pad_left", INT, 0), (5, "bias_term", INT, 0), (6, "weight_data_size", INT, 0), *_ACTIVATION,
    (15, "pad_right", INT, "pad_left"),
)
layer("Convolution1D", *_CONV1D_GEOMETRY, (18, "pad_value", FLOAT, 0.0), (19, "dynamic_weight", INT, 0),
      weights=_CONV_WEIGHTS)
layer("ConvolutionDepthWise1D", *_CONV1D_GEOMETRY, (7, "group", INT, 1), (18, "pad_value", FLOAT, 0.0),
      (19, "dynamic_weight", INT, 0), weights=_CONV_WEIGHTS)
layer("Deconvolution1D", *_CONV1D_GEOMETRY, (18, "output_pad_right", INT, 0), (20, "output_w", INT, 0),
      (28, "dynamic_weight", INT, 0), weights=_CONV_WEIGHTS)
layer("Pooling1D", (0, "pooling_type", INT, 0), (1, "kernel_w", INT, 0), (2, "stride_w", INT, 1),
      (3, "pad_left", INT, 0), (14, "pad_right", INT, "pad_left"), (4, "global_pooling", INT, 0),
      (5, "pad_mode", INT, 0), (6, "avgpool_count_include_pad", INT, 0), (7, "adaptive_pooling", INT, 0),
      (8, "out_w", INT, 0))

# ---- element-wise and per-channel layers from caffe-era ncnn that pnnx also writes ----
# (exp.cpp, log.cpp, power.cpp, threshold.cpp, scale.cpp, bias.cpp, normalize.cpp, ...)
layer("Softplus")
layer("AbsVal")
layer("BNLL")
layer("DeepCopy")
layer("Threshold", (0, "threshold", FLOAT, 0.0))
layer("Exp", (0, "base", FLOAT, -1.0), (1, "scale", FLOAT, 1.0), (2, "shift", FLOAT, 0.0))
layer("Log", (0, "base", FLOAT, -1.0), (1, "scale", FLOAT, 1.0), (2, "shift", FLOAT, 0.0))
layer("Power", (0, "power", FLOAT, 1.0), (1, "scale", FLOAT, 1.0), (2, "shift", FLOAT, 0.0))
# scale_data_size -233: the scale is the second input blob and nothing is read from the .bin
_own_scale = lambda p: p.scale_data_size != -233  # noqa: E731
layer("Scale", (0, "scale_data_size", INT, 0), (1, "bias_term", INT, 0),
      weights=(WeightSpec("scale_data", _numel("scale_data_size"), present=_own_scale),
               WeightSpec("bias_data", _numel("scale_data_size"), present=lambda p: _own_scale(p) and p.bias_term)))
layer("Bias", (0, "bias_data_size", INT, 0), weights=(WeightSpec("bias_data", _numel("bias_data_size")),))
layer("ShuffleChannel", (0, "group", INT, 1), (1, "reverse", INT, 0))
# across_channel defaults to 1 in normalize.cpp (operators.md says 0)
layer("Normalize", (0, "across_spatial", INT, 0), (1, "channel_shared", INT, 0), (2, "eps", FLOAT, 0.0001),
      (3, "scale_data_size", INT, 0), (4, "across_channel", INT, 1), (9, "eps_mode", INT, 0),
      weights=(WeightSpec("scale_data", _numel("scale_data_size")),))
layer("StatisticsPooling", (0, "include_stddev", INT, 0))
layer("Diag", (0, "diagonal", INT, 0))

# ---- 3-D convolution and pooling (convolution3d.cpp, pooling3d.cpp): input (c, d, h, w) ----
layer("Convolution3D", (0, "num_output", INT, 0), (1, "kernel_w", INT, 0), (2, "dilation_w", INT, 1),
      (3, "stride_w", INT, 1), (4, "pad_left", INT, 0), (5, "bias_term", INT, 0), (6, "weight_data_size", INT, 0),
      *_ACTIVATION, (11, "kernel_h", INT, "kernel_w"), (12, "dilation_h", INT, "dilation_w"),
      (13, "stride_h", INT, "stride_w"), (14, "pad_top", INT, "pad_left"), (15, "pad_right", INT, "pad_left"),
      (16, "pad_bottom", INT, "pad_top"), (24, "pad_front", INT, "pad_left"), (17, "pad_behind", INT, "pad_front"),
      (18, "pad_value", FLOAT, 0.0), (21, "kernel_d", INT, "kernel_w"), (22, "dilation_d", INT, "dilation_w"),
      (23, "stride_d", INT, "stride_w"), weights=_CONV_WEIGHTS)
layer("ConvolutionDepthWise3D", *((q.id, q.name, q.kind, q.default) for q in SPECS["Convolution3D"].params),
      (7, "group", INT, 1), weights=_CONV_WEIGHTS)
layer("Deconvolution3D", (0, "num_output", INT, 0), (1, "kernel_w", INT, 0), (2, "dilation_w", INT, 1),
      (3, "stride_w", INT, 1), (4, "pad_left", INT, 0), (5, "bias_term", INT, 0), (6, "weight_data_size", INT, 0),
      *_ACTIVATION, (11, "kernel_h", INT, "kernel_w"), (12, "dilation_h", INT, "dilation_w"),
      (13, "stride_h", INT, "stride_w"), (14, "pad_top", INT, "pad_left"), (15, "pad_right", INT, "pad_left"),
      (16, "pad_bottom", INT, "pad_top"), (24, "pad_front", INT, "pad_left"), (17, "pad_behind", INT, "pad_front"),
      (18, "output_pad_right", INT, 0), (19, "output_pad_bottom", INT, "output_pad_right"),
      (20, "output_pad_behind", INT, "output_pad_right"), (21, "kernel_d", INT, "kernel_w"),
      (22, "dilation_d", INT, "dilation_w"), (23, "stride_d", INT, "stride_w"), (25, "output_w", INT, 0),
      (26, "output_h", INT, "output_w"), (27, "output_d", INT, "output_w"), weights=_CONV_WEIGHTS)
layer("DeconvolutionDepthWise3D", *((q.id, q.name, q.kind, q.default) for q in SPECS["Deconvolution3D"].params),
      (7, "group", INT, 1), weights=_CONV_WEIGHTS)
layer("Pooling3D", (0, "pooling_type", INT, 0), (1, "kernel_w", INT, 0), (2, "stride_w", INT, 1),
      (3, "pad_left", INT, 0), (4, "global_pooling", INT, 0), (5, "pad_mode", INT, 0),
      (6, "avgpool_count_include_pad", INT, 0), (7, "adaptive_pooling", INT, 0), (8, "out_w", INT, 0),
      (11, "kernel_h", INT, "kernel_w"), (12, "stride_h", INT, "stride_w"), (13, "pad_top", INT, "pad_left"),
      (14, "pad_right", INT, "pad_left"), (15, "pad_bottom", INT, "pad_top"), (23, "pad_front", INT, "pad_left"),
      (16, "pad_behind", INT, "pad_front"), (18, "out_h", INT, "out_w"), (21, "kernel_d", INT, "kernel_w"),
      (22, "stride_d", INT, "stride_w"), (28, "out_d", INT, "out_w"))

# ---- STFT and inverse STFT (spectrogram.cpp, inversespectrogram.cpp): pnnx's torch.stft/istft ----
_STFT_COMMON = ((0, "n_fft", INT, 0), (3, "winlen", INT, "n_fft"), (4, "window_type", INT, 0),
                (5, "center", INT, 1), (7, "normalized", INT, 0))
# hoplen defaults to n_fft / 4 (None here: the kernels work it out from n_fft)
layer("Spectrogram", *_STFT_COMMON, (1, "power", INT, 0), (2, "hoplen", INT, None), (6, "pad_type", INT, 2),
      (8, "onesided", INT, 1))
# returns defaults to 0 (complex) in inversespectrogram.cpp; operators.md says 1
layer("InverseSpectrogram", *_STFT_COMMON, (1, "returns", INT, 0), (2, "hoplen", INT, None))
