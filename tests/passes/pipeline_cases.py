"""Tiny hand-built models, one per pass that no model in models/ makes fire (tests/passes/test_pipeline.py)."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

from onnx_cases import make_model
from quantized_cases import dynamic_model, qdq_chain_model, qdq_moves_model, qlinear_model, quantized_layout_model

RNG = np.random.default_rng(5)


def _rand(*shape) -> np.ndarray:
    return RNG.uniform(0.5, 1.5, shape).astype(np.float32)


def inline_if() -> onnx.ModelProto:
    """An If on a constant condition becomes its then branch."""
    branch = lambda name, op: helper.make_graph(     # noqa: E731
        [helper.make_node(op, ["x"], [f"{name}_y"])], name, [],
        [helper.make_value_info(f"{name}_y", helper.make_tensor_type_proto(TensorProto.FLOAT, None))])
    nodes = [helper.make_node("If", ["cond"], ["y"], then_branch=branch("then", "Relu"),
                              else_branch=branch("else", "Neg"))]
    return make_model(nodes, [("x", [1, 3, 4])], [("y", None)], [("cond", np.array(True))])


def express_shapes() -> onnx.ModelProto:
    """A Reshape whose target holds a run-time extent ('n') becomes an ncnn expression."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "one"], ["n"], axis=0),
             helper.make_node("Concat", ["lead", "n", "two", "two"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["y"])]
    ints = lambda v: np.array(v, np.int64)       # noqa: E731
    return make_model(nodes, [("x", [1, "n", 4])], [("y", None)],
                      [("one", ints([1])), ("lead", ints([1])), ("two", ints([2]))])


def fuse_conv_affine() -> onnx.ModelProto:
    """Conv -> per-channel Mul -> per-channel Add folds into the Conv."""
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Mul", ["c", "scale"], ["m"]),
             helper.make_node("Add", ["m", "shift"], ["y"])]
    return make_model(nodes, [("x", [1, 2, 5, 5])], [("y", None)],
                      [("w", _rand(3, 2, 3, 3)), ("b", _rand(3)), ("scale", _rand(1, 3, 1, 1)),
                       ("shift", _rand(1, 3, 1, 1))])


def fuse_hardswish() -> onnx.ModelProto:
    nodes = [helper.make_node("HardSigmoid", ["x"], ["h"], alpha=1 / 6, beta=0.5),
             helper.make_node("Mul", ["x", "h"], ["y"])]
    return make_model(nodes, [("x", [1, 3, 4])], [("y", None)])


def fuse_layernorm() -> onnx.ModelProto:
    """(x - mean) / sqrt(mean((x - mean)^2) + eps) * gamma + beta, written out."""
    nodes = [helper.make_node("ReduceMean", ["x"], ["mu"], axes=[-1]),
             helper.make_node("Sub", ["x", "mu"], ["d"]),
             helper.make_node("Pow", ["d", "two"], ["sq"]),
             helper.make_node("ReduceMean", ["sq"], ["var"], axes=[-1]),
             helper.make_node("Add", ["var", "eps"], ["ve"]),
             helper.make_node("Sqrt", ["ve"], ["sd"]),
             helper.make_node("Div", ["d", "sd"], ["n"]),
             helper.make_node("Mul", ["n", "gamma"], ["g"]),
             helper.make_node("Add", ["g", "beta"], ["y"])]
    return make_model(nodes, [("x", [1, 6, 8])], [("y", None)],
                      [("two", np.float32(2)), ("eps", np.float32(1e-5)), ("gamma", _rand(8)), ("beta", _rand(8))])


def rewrite_softmax_nan_guard() -> onnx.ModelProto:
    """Where(IsNaN(Softmax(z)), 0, p) after a -inf mask."""
    nodes = [helper.make_node("Add", ["x", "bias"], ["z"]),
             helper.make_node("Softmax", ["z"], ["p"], axis=-1),
             helper.make_node("IsNaN", ["p"], ["nan"]),
             helper.make_node("Where", ["nan", "zero", "p"], ["y"])]
    bias = np.array([[[0, -np.inf, 0, 0]]], np.float32)
    return make_model(nodes, [("x", [1, 2, 4])], [("y", None)], [("bias", bias), ("zero", np.float32(0))])


def rewrite_division_nan_guard() -> onnx.ModelProto:
    """torch.export's atan2: Where(IsNaN(r), 0, r) over atan(y / x) moved by +-pi."""
    from test_rewrite_division_nan_guard import atan2_model
    return atan2_model()


def merge_broadcast_axes() -> onnx.ModelProto:
    """A 6-D Add (5 ncnn axes) whose operands broadcast alike over merged axis runs."""
    nodes = [helper.make_node("Add", ["x", "c"], ["y"])]
    return make_model(nodes, [("x", [1, 2, 3, 4, 5, 6])], [("y", None)], [("c", _rand(6))])


def fold_scale_into_matmul() -> onnx.ModelProto:
    """timm's LayerScale: (x W + b) * gamma, then a residual Add."""
    nodes = [helper.make_node("MatMul", ["x", "W"], ["p"]), helper.make_node("Add", ["p", "b"], ["a"]),
             helper.make_node("Mul", ["a", "gamma"], ["s"]), helper.make_node("Add", ["x", "s"], ["y"])]
    return make_model(nodes, [("x", [1, 5, 4])], [("y", None)],
                      [("W", _rand(4, 4)), ("b", _rand(4)), ("gamma", _rand(4))])


def expand_qlinear() -> onnx.ModelProto:
    """QLinearConv/QLinearMatMul become DequantizeLinear -> float op -> QuantizeLinear, which
    plan_int8 and apply_int8 then make ncnn int8 layers."""
    return qlinear_model()


def narrow_quantize_clips() -> onnx.ModelProto:
    """quantize_static's Q/DQ pairs around a Conv, a SiLU and a Clip: their clips join the producers."""
    return qdq_chain_model()


def eliminate_identity_qdq() -> onnx.ModelProto:
    """Q/DQ pairs after Relu, MaxPool and Reshape with their input's scale give their input back."""
    return qdq_moves_model()


def sink_quantize() -> onnx.ModelProto:
    """Q -> Reshape -> Transpose -> DQ -> MatMul: the Q moves below both (and below a Split)."""
    return quantized_layout_model()


def carry_quantized_as_float() -> onnx.ModelProto:
    """Q -> MaxPool -> MaxPool -> DQ: the int8 tensors between become float32 whole numbers."""
    return quantized_layout_model()


def expand_dynamic_quantization() -> onnx.ModelProto:
    """DynamicQuantizeLinear -> MatMulInteger / ConvInteger become float ops."""
    return dynamic_model()


def fuse_groupnorm() -> onnx.ModelProto:
    """TorchScript's GroupNorm: Reshape (N, G, -1) -> InstanceNormalization -> Reshape back -> Mul -> Add."""
    nodes = [helper.make_node("Reshape", ["x", "groups"], ["r"]),
             helper.make_node("InstanceNormalization", ["r", "s", "b"], ["n"]),
             helper.make_node("Reshape", ["n", "back"], ["y0"]),
             helper.make_node("Mul", ["y0", "gamma"], ["y1"]), helper.make_node("Add", ["y1", "beta"], ["y"])]
    return make_model(nodes, [("x", [1, 4, 3, 3])], [("y", None)],
                      [("groups", np.array([1, 2, -1], np.int64)), ("back", np.array([1, 4, 3, 3], np.int64)),
                       ("s", _rand(2)), ("b", _rand(2)), ("gamma", _rand(4, 1, 1)), ("beta", _rand(4, 1, 1))])


def fuse_channel_shuffle() -> onnx.ModelProto:
    """ShuffleNet's channel shuffle: Reshape (1, G, C/G, H, W) -> Transpose (0, 2, 1, 3, 4) -> Reshape back."""
    nodes = [helper.make_node("Reshape", ["x", "split"], ["s"]),
             helper.make_node("Transpose", ["s"], ["t"], perm=[0, 2, 1, 3, 4]),
             helper.make_node("Reshape", ["t", "back"], ["y"])]
    return make_model(nodes, [("x", [1, 4, 3, 3])], [("y", None)],
                      [("split", np.array([1, 2, 2, 3, 3], np.int64)), ("back", np.array([1, 4, 3, 3], np.int64))])


def convert_pointwise_conv_innerproduct() -> onnx.ModelProto:
    """A classifier head: GlobalAveragePool -> 1x1 Conv -> Flatten."""
    nodes = [helper.make_node("GlobalAveragePool", ["x"], ["p"]), helper.make_node("Conv", ["p", "w"], ["c"]),
             helper.make_node("Flatten", ["c"], ["y"])]
    return make_model(nodes, [("x", [1, 4, 3, 3])], [("y", None)], [("w", _rand(5, 4, 1, 1))])


def flatten_matmul_rows() -> onnx.ModelProto:
    """A batch of matrices (4, 3, 8) times a constant (8, 5) weight, plus a bias."""
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["y"])]
    return make_model(nodes, [("x", [4, 3, 8])], [("y", None)], [("w", _rand(8, 5)), ("b", _rand(5))])


def fuse_sdpa() -> onnx.ModelProto:
    """Attention over a batch of 3 (no projections): Softmax(q Transpose(k) / 2) v."""
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]), helper.make_node("MatMul", ["q", "kt"], ["s"]),
             helper.make_node("Div", ["s", "two"], ["d"]), helper.make_node("Softmax", ["d"], ["p"], axis=-1),
             helper.make_node("MatMul", ["p", "v"], ["y"])]
    return make_model(nodes, [("q", [3, 4, 2]), ("k", [3, 5, 2]), ("v", [3, 5, 2])], [("y", None)],
                      [("two", np.float32(2.0))])


def convert_outer_matmul() -> onnx.ModelProto:
    """Rotary frequencies (1, 8, 1) times positions (1, 1, T), as transformers 4 writes them."""
    from test_convert_outer_matmul import outer
    return outer(1)


def split_wide_reductions() -> onnx.ModelProto:
    """Adaptive max pooling 5 -> 3 as torch.export writes it: windows gathered into six axes, a max over
    two that are apart (convert_window_gathers takes only sums and means)."""
    from test_split_wide_reductions import pool_model
    return pool_model(5, 3, op="ReduceMax")


def convert_einsum_transpose() -> onnx.ModelProto:
    """SD3's unpatchify: a one-operand Einsum that only reorders six axes."""
    from test_convert_einsum_transpose import unpatchify
    return unpatchify()


def unroll_peephole_lstm() -> onnx.ModelProto:
    """An LSTM with peepholes over a static length."""
    from test_unroll_peephole_lstm import peephole_lstm
    return peephole_lstm()


CASES = {f.__name__: f for f in (convert_einsum_transpose, unroll_peephole_lstm, expand_qlinear, narrow_quantize_clips, eliminate_identity_qdq, sink_quantize,
                                 carry_quantized_as_float, expand_dynamic_quantization, inline_if, express_shapes,
                                 fuse_conv_affine, fuse_hardswish, fuse_layernorm, rewrite_softmax_nan_guard,
                                 rewrite_division_nan_guard, merge_broadcast_axes, fold_scale_into_matmul, fuse_groupnorm, fuse_channel_shuffle,
                                 convert_pointwise_conv_innerproduct, flatten_matmul_rows,
                                 fuse_sdpa, split_wide_reductions, convert_outer_matmul)}
