"""QOperator nodes as DequantizeLinear -> float op -> QuantizeLinear: what each one means.

onnxruntime's quantize_static with QuantFormat.QOperator writes QLinearConv / QLinearMatMul (ONNX)
and com.microsoft's QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu, QLinearSoftmax,
QLinearConcat, QLinearGlobalAveragePool, QLinearAveragePool and QGemm (QLinearReduceMean has no
onnxruntime CPU kernel to check it against: it stays refused). Each one is,
by its definition, its inputs dequantized, the float op, the result quantized; onnxruntime's kernels
compute that with integer sums or lookup tables, which can round a value next to a .5 step the
other way. This table says which inputs are (value, scale, zero point) triples, which float op and
attributes result, and where the output's scale and zero point are; the loader uses it to infer
shapes (onnx knows no com.microsoft op) and passes/expand_qlinear.py to rewrite the graph.
"""
from __future__ import annotations

from dataclasses import dataclass, field

MS_DOMAIN = "com.microsoft"


@dataclass
class Expansion:
    float_op: str
    triples: list[tuple[str, str, str]]   # (value, scale, zero point or "") per float input
    output: tuple[str, str] | None        # the output's (scale, zero point or ""); None: a float output
    attrs: dict = field(default_factory=dict)
    weight_axis: int | None = None        # the per-channel axis of the second input's scales
    bias: tuple[str, float] | None = None  # an int32 bias input and the factor on top of x_scale * w_scale


def _slot(inputs: list[str], k: int) -> str:
    return inputs[k] if k < len(inputs) else ""


def _triples(inputs: list[str], starts) -> list[tuple[str, str, str]]:
    return [(inputs[k], inputs[k + 1], _slot(inputs, k + 2)) for k in starts]


def _unary(float_op: str, keep=()):
    def expand(inputs, attrs):
        return Expansion(float_op, _triples(inputs, [0]), (inputs[3], _slot(inputs, 4)),
                         {k: v for k, v in attrs.items() if k in keep})
    return expand


def _binary(float_op: str):
    def expand(inputs, attrs):
        return Expansion(float_op, _triples(inputs, [0, 3]), (inputs[6], _slot(inputs, 7)))
    return expand


def _softmax(inputs, attrs):
    axis, opset = int(attrs.get("axis", -1)), int(attrs.get("opset", 13))
    if opset < 13 and axis != -1:
        raise ValueError(f"Softmax of opset {opset} flattens from axis {axis} (only the last axis is supported)")
    return Expansion("Softmax", _triples(inputs, [0]), (inputs[3], _slot(inputs, 4)), {"axis": axis})


def _channels_first(float_op: str):
    def expand(inputs, attrs):
        if attrs.get("channels_last", 0):
            raise ValueError("channels_last=1 (NHWC) pooling is not supported")
        kept = {k: v for k, v in attrs.items() if k != "channels_last"}
        return Expansion(float_op, _triples(inputs, [0]), (inputs[3], _slot(inputs, 4)), kept)
    return expand


def _concat(inputs, attrs):
    return Expansion("Concat", _triples(inputs, range(2, len(inputs), 3)), (inputs[0], _slot(inputs, 1)),
                     {"axis": int(attrs["axis"])})


def _qgemm(inputs, attrs):
    """C (int32) is quantized with scale alpha * a_scale * b_scale; without y_scale the output is float."""
    trans_b = int(attrs.get("transB", 0))
    kept = {"alpha": float(attrs.get("alpha", 1.0)), "transA": int(attrs.get("transA", 0)), "transB": trans_b}
    output = (inputs[7], _slot(inputs, 8)) if _slot(inputs, 7) else None
    bias = (inputs[6], kept["alpha"]) if _slot(inputs, 6) else None
    return Expansion("Gemm", _triples(inputs, [0, 3]), output, kept, weight_axis=0 if trans_b else 1, bias=bias)


def _qlinear_conv(inputs, attrs):
    bias = (inputs[8], 1.0) if _slot(inputs, 8) else None
    return Expansion("Conv", _triples(inputs, [0, 3]), (inputs[6], _slot(inputs, 7)), dict(attrs),
                     weight_axis=0, bias=bias)


def _qlinear_matmul(inputs, attrs):
    return Expansion("MatMul", _triples(inputs, [0, 3]), (inputs[6], _slot(inputs, 7)), weight_axis=-1)


# op -> expansion of (inputs, attrs); the ONNX-domain ones first
EXPANSIONS = {
    "QLinearConv": _qlinear_conv,
    "QLinearMatMul": _qlinear_matmul,
    "QLinearAdd": _binary("Add"),
    "QLinearMul": _binary("Mul"),
    "QLinearSigmoid": _unary("Sigmoid"),
    "QLinearLeakyRelu": _unary("LeakyRelu", keep=("alpha",)),
    "QLinearSoftmax": _softmax,
    "QLinearConcat": _concat,
    "QLinearGlobalAveragePool": _channels_first("GlobalAveragePool"),
    "QLinearAveragePool": _channels_first("AveragePool"),
    "QGemm": _qgemm,
}
MS_OPS = set(EXPANSIONS) - {"QLinearConv", "QLinearMatMul"}

# attributes the float op needs spelled out (the com.microsoft schemas' defaults differ or are unknown to onnx)
DEFAULTS = {"QLinearLeakyRelu": {"alpha": 0.01}}


def expansion(op: str, inputs: list[str], attrs: dict) -> Expansion:
    """The expansion of one QOperator node; ValueError says why it has none."""
    return EXPANSIONS[op](inputs, {**DEFAULTS.get(op, {}), **attrs})
