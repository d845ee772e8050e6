"""Small quantized ONNX models shared by the quantization and pipeline tests."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def qlinear_model() -> onnx.ModelProto:
    """x -> QuantizeLinear -> QLinearConv (per-channel, int32 bias) -> QLinearConv (depthwise)
    -> QLinearMatMul after a Reshape -> DequantizeLinear, all int8 with zero point 0."""
    rng = np.random.default_rng(2)

    def c(name, value, dtype):
        return numpy_helper.from_array(np.asarray(value, dtype), name)
    inits = [c("xs", 0.05, np.float32), c("z", 0, np.int8), c("w1", rng.integers(-127, 128, (4, 3, 3, 3)), np.int8),
             c("w1s", rng.uniform(0.005, 0.02, 4), np.float32), c("z4", np.zeros(4), np.int8),
             c("b1", rng.integers(-500, 500, 4), np.int32), c("y1s", 0.2, np.float32),
             c("w2", rng.integers(-127, 128, (4, 1, 3, 3)), np.int8), c("w2s", rng.uniform(0.005, 0.02, 4), np.float32),
             c("y2s", 0.1, np.float32), c("shape", [1, 4 * 36], np.int64),
             c("w3", rng.integers(-127, 128, (4 * 36, 5)), np.int8), c("w3s", 0.01, np.float32),
             c("y3s", 0.3, np.float32)]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "z"], ["xq"]),
             helper.make_node("QLinearConv", ["xq", "xs", "z", "w1", "w1s", "z4", "y1s", "z", "b1"], ["c1"],
                              pads=[1, 1, 1, 1]),
             helper.make_node("QLinearConv", ["c1", "y1s", "z", "w2", "w2s", "z4", "y2s", "z"], ["c2"],
                              pads=[1, 1, 1, 1], group=4),
             helper.make_node("Reshape", ["c2", "shape"], ["r"]),
             helper.make_node("QLinearMatMul", ["r", "y2s", "z", "w3", "w3s", "z", "y3s", "z"], ["m"]),
             helper.make_node("DequantizeLinear", ["m", "y3s", "z"], ["y"])]
    graph = helper.make_graph(nodes, "qop", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def qdq_chain_model() -> onnx.ModelProto:
    """quantize_static's form around one Conv: every tensor through a Q/DQ pair, x -> Conv (int8,
    per-channel) -> Sigmoid * x (SiLU) -> Clip(0, 6) -> y; scales small enough that the conv, the
    product and the clip saturate the int8 range for inputs of a few units."""
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(np.asarray(v, d), n) for n, v, d in [
        ("z", 0, np.int8), ("xs", 0.05, np.float32), ("w", rng.integers(-127, 128, (8, 4, 3, 3)), np.int8),
        ("ws", rng.uniform(0.005, 0.02, 8), np.float32), ("wz", np.zeros(8), np.int8),
        ("b", rng.normal(0, 1, 8), np.float32), ("as", 0.1, np.float32), ("ss", 1 / 127, np.float32),
        ("ms", 0.07, np.float32), ("lo", 0, np.float32), ("hi", 6, np.float32), ("ys", 0.03, np.float32)]]

    def pair(x, scale):
        return [helper.make_node("QuantizeLinear", [x, scale, "z"], [f"{x}_q"]),
                helper.make_node("DequantizeLinear", [f"{x}_q", scale, "z"], [f"{x}_d"])]
    nodes = [*pair("x", "xs"), helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], axis=0),
             helper.make_node("Conv", ["x_d", "wd", "b"], ["a"], pads=[1, 1, 1, 1]), *pair("a", "as"),
             helper.make_node("Sigmoid", ["a_d"], ["s"]), *pair("s", "ss"),
             helper.make_node("Mul", ["a_d", "s_d"], ["m"]), *pair("m", "ms"),
             helper.make_node("Clip", ["m_d", "lo", "hi"], ["c"]), *pair("c", "ys"),
             helper.make_node("Identity", ["c_d"], ["y"])]
    graph = helper.make_graph(nodes, "qdq_chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 7])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 6, 7])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def qdq_moves_model() -> onnx.ModelProto:
    """quantize_static's pairs after ops that only move values, each with its input's scale:
    x -> Conv (int8) -> Relu -> MaxPool -> Reshape -> Clip(-1, 6.0000002 = 60 steps) -> Sigmoid -> y,
    and the Relu's pair also read by a second int8 Conv -> y2."""
    rng = np.random.default_rng(6)
    inits = [numpy_helper.from_array(np.asarray(v, d), n) for n, v, d in [
        ("z", 0, np.int8), ("xs", 0.05, np.float32), ("w", rng.integers(-127, 128, (8, 4, 3, 3)), np.int8),
        ("w2", rng.integers(-127, 128, (3, 8, 1, 1)), np.int8), ("ws", rng.uniform(0.005, 0.02, 8), np.float32),
        ("w2s", rng.uniform(0.005, 0.02, 3), np.float32), ("wz", np.zeros(8), np.int8), ("w2z", np.zeros(3), np.int8),
        ("as", 0.1, np.float32), ("ss", 1 / 127, np.float32), ("shape", [1, 8, 9], np.int64),
        ("lo", -1, np.float32), ("hi", np.float32(60) * np.float32(0.1), np.float32)]]

    def pair(x, scale):
        return [helper.make_node("QuantizeLinear", [x, scale, "z"], [f"{x}_q"]),
                helper.make_node("DequantizeLinear", [f"{x}_q", scale, "z"], [f"{x}_d"])]
    nodes = [*pair("x", "xs"), helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], axis=0),
             helper.make_node("DequantizeLinear", ["w2", "w2s", "w2z"], ["w2d"], axis=0),
             helper.make_node("Conv", ["x_d", "wd"], ["a"], pads=[1, 1, 1, 1]), *pair("a", "as"),
             helper.make_node("Relu", ["a_d"], ["r"]), *pair("r", "as"),
             helper.make_node("MaxPool", ["r_d"], ["p"], kernel_shape=[2, 2], strides=[2, 2]), *pair("p", "as"),
             helper.make_node("Reshape", ["p_d", "shape"], ["f"]), *pair("f", "as"),
             helper.make_node("Clip", ["f_d", "lo", "hi"], ["c"]), *pair("c", "as"),
             helper.make_node("Sigmoid", ["c_d"], ["s"]), *pair("s", "ss"),
             helper.make_node("Identity", ["s_d"], ["y"]), helper.make_node("Conv", ["r_d", "w2d"], ["y2"])]
    graph = helper.make_graph(nodes, "qdq_moves", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 9]),
                               helper.make_tensor_value_info("y2", TensorProto.FLOAT, [1, 3, 6, 6])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


MS = "com.microsoft"
X_SCALE, X2_SCALE, Y_SCALE = 0.02, 0.03, 0.025


def _q(signed: bool):
    """(zero point dtype, the activations' zero point): symmetric int8, or uint8 with zero point 120."""
    return (np.int8, 0) if signed else (np.uint8, 120)


def qoperator_model(op: str, signed: bool) -> onnx.ModelProto:
    """x (and x2) -> QuantizeLinear -> one QOperator node -> DequantizeLinear -> y, as quantize_static's
    QOperator format writes it (com.microsoft ops, scales and zero points as initializers). QGemm's
    weights stay within 7 bits: onnxruntime's x86 uint8 x int8 kernel adds products in pairs into int16
    and saturates beyond (quantize_static's reduce_range exists for that)."""
    zdtype, zero = _q(signed)
    rng = np.random.default_rng(4)

    def c(name, value, dtype=np.float32):
        return numpy_helper.from_array(np.asarray(value, dtype), name)
    inits = [c("xs", X_SCALE), c("x2s", X2_SCALE), c("ys", Y_SCALE), c("z", zero, zdtype), c("wz", np.zeros(5), np.int8),
             c("ws", rng.uniform(0.005, 0.02, 5)), c("w", rng.integers(-63, 64, (8, 5)), np.int8),
             c("wt", rng.integers(-63, 64, (5, 8)), np.int8), c("bias", rng.integers(-900, 900, 5), np.int32)]
    x_shape, x2_shape, attrs, extra = [1, 4, 5, 6], [1, 4, 5, 6], {}, []
    single = ["xq", "xs", "z", "ys", "z"]
    inputs = {"QLinearAdd": ["xq", "xs", "z", "x2q", "x2s", "z", "ys", "z"],
              "QLinearMul": ["xq", "xs", "z", "x2q", "x2s", "z", "ys", "z"],
              "QLinearConcat": ["ys", "z", "xq", "xs", "z", "x2q", "x2s", "z"],
              "QGemm": ["xq", "xs", "z", "w", "ws", "wz", "bias", "ys", "z"],
              "QGemmFloat": ["xq", "xs", "z", "wt", "ws", "wz", "bias"]}.get(op, single)
    if op == "QLinearMul":
        x2_shape = [1, 4, 1, 1]
    if op in ("QGemm", "QGemmFloat"):
        x_shape, x2_shape = [3, 8], None
        attrs = {"transB": 1, "alpha": 0.5} if op == "QGemmFloat" else {}
    attrs.update({"QLinearLeakyRelu": {"alpha": 0.1}, "QLinearSoftmax": {"axis": -1, "opset": 13},
                  "QLinearConcat": {"axis": 1},
                  "QLinearAveragePool": {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]},
                  }.get(op, {}))
    two = len([i for i in inputs if i == "x2q"])
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "z"], ["xq"])]
    if two:
        nodes.append(helper.make_node("QuantizeLinear", ["x2", "x2s", "z"], ["x2q"]))
    float_out = op == "QGemmFloat"
    nodes.append(helper.make_node(op.replace("Float", ""), inputs, ["y" if float_out else "yq"], domain=MS, **attrs))
    if not float_out:
        nodes.append(helper.make_node("DequantizeLinear", ["yq", "ys", "z"], ["y"]))
    graph_inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)]
    if two:
        graph_inputs.append(helper.make_tensor_value_info("x2", TensorProto.FLOAT, x2_shape))
    graph = helper.make_graph(nodes, op, graph_inputs, [helper.make_value_info(
        "y", helper.make_tensor_type_proto(TensorProto.FLOAT, None))], inits + extra)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid(MS, 1)])


QOPERATOR_OPS = ["QLinearAdd", "QLinearMul", "QLinearSigmoid", "QLinearLeakyRelu", "QLinearSoftmax",
                 "QLinearConcat", "QLinearGlobalAveragePool", "QLinearAveragePool",
                 "QGemm", "QGemmFloat"]


def quantized_layout_model() -> onnx.ModelProto:
    """Quantized tensors moved before they are dequantized, as QOperator graphs do: Q -> Reshape ->
    Transpose -> DQ -> MatMul (an int8 InnerProduct once the Q sinks below both), Q -> Split -> DQs,
    and Q -> MaxPool -> MaxPool -> DQ (int8 values carried as float32)."""
    rng = np.random.default_rng(6)

    def c(name, value, dtype=np.float32):
        return numpy_helper.from_array(np.asarray(value, dtype), name)
    inits = [c("xs", X_SCALE), c("z", 0, np.int8), c("shape", [1, 8, 16], np.int64),
             c("w", rng.integers(-127, 128, (8, 6)), np.int8), c("ws", rng.uniform(0.005, 0.02, 6)),
             c("wz", np.zeros(6), np.int8), c("split", [3, 5], np.int64)]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "z"], ["q1"]),
             helper.make_node("Reshape", ["q1", "shape"], ["r"]),
             helper.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 1]),
             helper.make_node("DequantizeLinear", ["t", "xs", "z"], ["td"]),
             helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], axis=1),
             helper.make_node("MatMul", ["td", "wd"], ["y1"]),
             helper.make_node("QuantizeLinear", ["x", "xs", "z"], ["q2"]),
             helper.make_node("Split", ["q2", "split"], ["s0", "s1"], axis=1),
             helper.make_node("DequantizeLinear", ["s0", "xs", "z"], ["y2"]),
             helper.make_node("DequantizeLinear", ["s1", "xs", "z"], ["y3"]),
             helper.make_node("QuantizeLinear", ["x", "xs", "z"], ["q3"]),
             helper.make_node("MaxPool", ["q3"], ["m1"], kernel_shape=[2, 2]),
             helper.make_node("MaxPool", ["m1"], ["m2"], kernel_shape=[2, 2]),
             helper.make_node("DequantizeLinear", ["m2", "xs", "z"], ["y4"])]
    outputs = [helper.make_value_info(y, helper.make_tensor_type_proto(TensorProto.FLOAT, None))
               for y in ("y1", "y2", "y3", "y4")]
    graph = helper.make_graph(nodes, "layout", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 4, 4])],
                              outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def dynamic_model() -> onnx.ModelProto:
    """quantize_dynamic's pattern: x -> DynamicQuantizeLinear -> MatMulInteger (7-bit int8 weight, zero
    point per column) -> Cast -> Mul by x_scale * w_scale; and img -> DynamicQuantizeLinear ->
    ConvInteger (uint8 weight with zero point 3, padded) -> Cast -> Mul."""
    rng = np.random.default_rng(8)

    def c(name, value, dtype=np.float32):
        return numpy_helper.from_array(np.asarray(value, dtype), name)
    inits = [c("w", rng.integers(-63, 64, (8, 5)), np.int8), c("wz", [0, 1, -2, 0, 3], np.int8),
             c("ws", 0.01), c("k", rng.integers(0, 64, (4, 3, 3, 3)), np.uint8), c("kz", 3, np.uint8),
             c("ks", 0.02)]
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
             helper.make_node("MatMulInteger", ["xq", "w", "xz", "wz"], ["mi"]),
             helper.make_node("Cast", ["mi"], ["mf"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["xs", "ws"], ["s1"]),
             helper.make_node("Mul", ["mf", "s1"], ["y1"]),
             helper.make_node("DynamicQuantizeLinear", ["img"], ["iq", "is", "iz"]),
             helper.make_node("ConvInteger", ["iq", "k", "iz", "kz"], ["ci"], pads=[1, 1, 1, 1]),
             helper.make_node("Cast", ["ci"], ["cf"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["is", "ks"], ["s2"]),
             helper.make_node("Mul", ["cf", "s2"], ["y2"])]
    graph = helper.make_graph(nodes, "dynamic", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6, 8]),
                                                 helper.make_tensor_value_info("img", TensorProto.FLOAT, [1, 3, 5, 5])],
                              [helper.make_value_info(y, helper.make_tensor_type_proto(TensorProto.FLOAT, None))
                               for y in ("y1", "y2")], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def qdq_conv_chain() -> onnx.ModelProto:
    """x -> Q/DQ -> Conv -> c1 -> Q/DQ -> Conv -> c2 -> Q/DQ -> y, as quantize_static's QDQ format
    writes it (symmetric int8, weights per channel): both Convs run as ncnn int8 layers whose float
    outputs carry the ONNX names c1, c2."""
    rng = np.random.default_rng(10)

    def c(name, value, dtype=np.float32):
        return numpy_helper.from_array(np.asarray(value, dtype), name)
    inits = [c("xs", 0.02), c("c1s", 0.05), c("c2s", 0.08), c("z", 0, np.int8), c("wz", np.zeros(4), np.int8),
             c("w1", rng.integers(-127, 128, (4, 4, 3, 3)), np.int8), c("w1s", rng.uniform(0.002, 0.006, 4)),
             c("w2", rng.integers(-127, 128, (4, 4, 3, 3)), np.int8), c("w2s", rng.uniform(0.002, 0.006, 4)),
             c("b1", rng.normal(0, 0.1, 4))]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "z"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "z"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w1", "w1s", "wz"], ["w1d"], axis=0),
             helper.make_node("Conv", ["xd", "w1d", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("QuantizeLinear", ["c1", "c1s", "z"], ["c1q"]),
             helper.make_node("DequantizeLinear", ["c1q", "c1s", "z"], ["c1d"]),
             helper.make_node("DequantizeLinear", ["w2", "w2s", "wz"], ["w2d"], axis=0),
             helper.make_node("Conv", ["c1d", "w2d"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("QuantizeLinear", ["c2", "c2s", "z"], ["c2q"]),
             helper.make_node("DequantizeLinear", ["c2q", "c2s", "z"], ["y"])]
    graph = helper.make_graph(nodes, "qdq_chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 6, 6])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
