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
