"""What the CNN lowerings refuse, and that the message names the node, op, shapes and reason."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from converter import ConversionError, convert
from onnx_cases import make_model

W = np.ones((2, 3, 3, 3), np.float32)


def node(op, inputs, outputs=("y",), **attrs):
    return helper.make_node(op, list(inputs), list(outputs), name=f"my_{op.lower()}", **attrs)


CASES = {
    "conv_without_batch_axis": (
        # a batch of up to 16 runs per sample (lowering/per_sample.py); beyond that, refused
        [node("Conv", ["x", "w"])], [("x", (17, 3, 8, 8)), ("w", (2, 3, 3, 3))], [], {},
        ["Conv node 'my_conv'", "[17, 3, 8, 8]", "batch"]),
    "conv3d_runtime_weight": (
        [node("Conv", ["x", "w"])], [("x", (1, 3, 4, 8, 8)), ("w", (1, 3, 1, 1, 1))], [], {},
        ["Conv node 'my_conv'", "weight", "constant"]),
    "conv_3d_group_mismatch": (
        [node("Conv", ["x", "W5"], group=3)], [("x", (1, 3, 4, 8, 8))], [("W5", np.ones((3, 2, 1, 1, 1), np.float32))],
        {}, ["Conv node 'my_conv'", "with group 3 does not fit 3 input channels"]),
    "conv_same_dynamic_kernel_below_stride": (
        [node("Conv", ["x", "W1"], auto_pad="SAME_UPPER", strides=[2, 2])], [("x", (1, 3, "H", "W"))],
        [("W1", np.ones((2, 3, 1, 1), np.float32))], {}, ["SAME_UPPER", "--input-shape"]),
    "maxpool_dilations": (
        [node("MaxPool", ["x"], kernel_shape=[2, 2], dilations=[2, 2])], [("x", (1, 3, 8, 8))], [], {},
        ["MaxPool node 'my_maxpool'", "[1, 3, 8, 8]", "dilation"]),
    "pool_ceil_window_in_end_pad": (
        [node("MaxPool", ["x"], kernel_shape=[2, 2], strides=[3, 3], pads=[0, 0, 1, 1], ceil_mode=1)],
        [("x", (1, 3, 5, 5))], [], {}, ["MaxPool node 'my_maxpool'", "ceil_mode", "end padding"]),
    "pool_ceil_dynamic_may_drop": (
        [node("AveragePool", ["x"], kernel_shape=[2, 2], strides=[3, 3], ceil_mode=1)],
        [("x", (1, 3, "H", "W"))], [], {}, ["AveragePool node 'my_averagepool'", "--input-shape"]),
    "avgpool_same_exclude_pad_dynamic": (
        [node("AveragePool", ["x"], kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")],
        [("x", (1, 3, "H", "W"))], [], {}, ["count_include_pad=0", "--input-shape"]),
    "pool_without_batch_axis": (
        [node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2])], [("x", (2, 3, 8, 8))], [], {},
        ["MaxPool node 'my_maxpool'", "[2, 3, 8, 8]", "batch"]),
    "pool_4d": (
        [node("AveragePool", ["x"], kernel_shape=[2, 2, 2, 2])], [("x", (1, 3, 4, 4, 8, 8))], [], {},
        ["AveragePool node 'my_averagepool'", "'x' would need 5 ncnn axes", "ncnn holds at most 4"]),
    "batchnorm_training": (
        [node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm", "rv"], training_mode=1)],
        [("x", (1, 2, 4, 4))], [(n, np.ones(2, np.float32)) for n in "sbmv"], {"opset": 15},
        ["BatchNormalization node 'my_batchnormalization'", "training_mode"]),
    "clip_runtime_bound_not_one_value": (       # (a run-time scalar bound lowers to BinaryOp max)
        [node("Clip", ["x", "lo"])], [("x", (1, 3, 4)), ("lo", (3,))], [], {},
        ["Clip node 'my_clip'", "[3]", "one value"]),
    "hardsigmoid_negative_alpha": (
        [node("HardSigmoid", ["x"], alpha=-0.5)], [("x", (1, 3, 4))], [], {},
        ["HardSigmoid node 'my_hardsigmoid'", "alpha"]),
}


@pytest.mark.parametrize("case", CASES)
def test_refused_with_a_clear_message(case):
    nodes, inputs, inits, kw, expected = CASES[case]
    outputs = [(o, None) for o in nodes[-1].output[:1]]
    model = make_model(nodes, inputs, outputs, inits, **kw)
    with pytest.raises(ConversionError) as info:
        convert(model)
    message = str(info.value)
    for part in expected:
        assert part in message, f"{part!r} not in: {message}"


def test_maxpool_indices_used_is_refused():
    nodes = [node("MaxPool", ["x"], ["y", "idx"], kernel_shape=[2, 2]), node("Identity", ["idx"], ["z"])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 3, 8, 8))
    graph = helper.make_graph(nodes, "t", [x],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, (1, 3, 7, 7)),
                               helper.make_tensor_value_info("z", TensorProto.INT64, (1, 3, 7, 7))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    with pytest.raises(ConversionError, match="MaxPool node 'my_maxpool'.*Indices"):
        convert(model)
