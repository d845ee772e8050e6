"""Channel-wise CNN ops over a batch N > 1 run with the batch merged into the channels: real ncnn
and the interpreter against onnxruntime, at N = 2 and N = 3 (so the item and channel axes cannot
pass for each other), with the rewrite seen to fire."""
import numpy as np
import pytest
from onnx import helper

from converter import convert
from converter.ir import ConversionError
from converter.verification.check import verify
from onnx_cases import assert_one_file_many_sizes, check_in_ncnn, check_interpreter_matches_ncnn, make_model, ncnn_layer_types

C = 4


def _weights(seed, **shapes):
    rng = np.random.default_rng(seed)
    return [(name, rng.uniform(-1, 1, shape).astype(np.float32)) for name, shape in shapes.items()]


def single_op(batch, op, spatial=(6, 7), inputs=(), weights=(), opset=13, **attrs):
    node = helper.make_node(op, ["x", *inputs], ["y"], **attrs)
    return make_model([node], [("x", [batch, C, *spatial])], [("y", None)], weights, opset=opset)


CASES = {
    "MaxPool": lambda n: single_op(n, "MaxPool", kernel_shape=[2, 3], strides=[2, 1], pads=[0, 1, 1, 1]),
    "AveragePool": lambda n: single_op(n, "AveragePool", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    "MaxPool1d": lambda n: single_op(n, "MaxPool", (9,), kernel_shape=[2], strides=[2]),
    "GlobalAveragePool": lambda n: single_op(n, "GlobalAveragePool"),
    "GlobalMaxPool": lambda n: single_op(n, "GlobalMaxPool"),
    "Conv": lambda n: single_op(n, "Conv", inputs=["w", "b"], weights=_weights(1, w=(5, C, 3, 3), b=(5,)),
                                kernel_shape=[3, 3], pads=[1, 0, 1, 2], strides=[1, 2]),
    "Conv grouped": lambda n: single_op(n, "Conv", inputs=["w"], weights=_weights(2, w=(6, C // 2, 2, 2)),
                                        kernel_shape=[2, 2], group=2),
    "Conv depthwise": lambda n: single_op(n, "Conv", inputs=["w", "b"], weights=_weights(3, w=(C, 1, 3, 3), b=(C,)),
                                          kernel_shape=[3, 3], group=C),
    "ConvTranspose": lambda n: single_op(n, "ConvTranspose", inputs=["w", "b"],
                                         weights=_weights(4, w=(C, 3, 2, 2), b=(3,)),
                                         kernel_shape=[2, 2], strides=[2, 2]),
    "ConvTranspose1d": lambda n: single_op(n, "ConvTranspose", (5,), inputs=["w"], weights=_weights(5, w=(C, 2, 3)),
                                           kernel_shape=[3], strides=[2]),
    "InstanceNormalization": lambda n: single_op(n, "InstanceNormalization", inputs=["s", "b"],
                                                 weights=_weights(6, s=(C,), b=(C,))),
    "InstanceNormalization1d": lambda n: single_op(n, "InstanceNormalization", (9,), inputs=["s", "b"],
                                                   weights=_weights(7, s=(C,), b=(C,))),
    "GroupNormalization": lambda n: single_op(n, "GroupNormalization", inputs=["s", "b"],
                                              weights=_weights(8, s=(C,), b=(C,)), opset=21, num_groups=2),
    "DepthToSpace CRD": lambda n: single_op(n, "DepthToSpace", blocksize=2, mode="CRD"),
}


@pytest.fixture(scope="module")
def converted_cases(tmp_path_factory):
    """(model, conversion) per case and batch, converted and checked in real ncnn once."""
    done = {}
    for name, build in CASES.items():
        for n in (2, 3):
            model = build(n)
            done[name, n] = model, check_in_ncnn(model, tmp_path_factory.mktemp("case"))
    return done


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("name", list(CASES))
def test_batch_merged_into_channels(converted_cases, tmp_path, name, n):
    model, converted = converted_cases[name, n]
    assert converted.stats["batch_merged_into_channels"] == 1
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_a_chain_reshapes_once_at_each_end(tmp_path):
    """Conv -> MaxPool -> InstanceNorm at N = 3: the middle tensors stay merged."""
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("MaxPool", ["c"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("InstanceNormalization", ["p", "s", "b"], ["y"])]
    model = make_model(nodes, [("x", [3, C, 8, 6])], [("y", None)], _weights(9, w=(5, C, 3, 3), s=(5,), b=(5,)))
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["batch_merged_into_channels"] == 3
    assert ncnn_layer_types(converted).count("Reshape") == 2
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_an_activation_between_convs_stays_merged_and_fuses(tmp_path):
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[3, 3]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Conv", ["r", "v"], ["y"], kernel_shape=[1, 1])]
    model = make_model(nodes, [("x", [2, C, 7, 6])], [("y", None)], _weights(11, w=(5, C, 3, 3), v=(3, 5, 1, 1)))
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["batch_merged_into_channels"] == 3
    assert ncnn_layer_types(converted) == ["Input", "Reshape", "ConvolutionDepthWise", "ConvolutionDepthWise",
                                           "Reshape"]
    check_interpreter_matches_ncnn(converted, model, tmp_path)


@pytest.mark.parametrize("n", [2, 3])
def test_a_residual_block_stays_merged(tmp_path, n):
    """Conv -> ReLU -> Conv, + the ReLU's output, * a scalar: one Reshape at each end."""
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Conv", ["r", "v"], ["d"], kernel_shape=[1, 1]),
             helper.make_node("Add", ["d", "r"], ["s"]),
             helper.make_node("Mul", ["s", "half"], ["y"])]
    weights = _weights(13, w=(5, C, 3, 3), v=(5, 5, 1, 1)) + [("half", np.float32([0.5]))]
    model = make_model(nodes, [("x", [n, C, 6, 5])], [("y", None)], weights)
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["batch_merged_into_channels"] == 5
    assert ncnn_layer_types(converted).count("Reshape") == 2
    check_interpreter_matches_ncnn(converted, model, tmp_path)


@pytest.mark.parametrize("n", [2, 3])
def test_five_axis_input_and_output_take_the_merged_shape(tmp_path, n):
    """[N, C, D, H, W] does not fit ncnn at all: the graph input and output are [N*C, D, H, W]."""
    nodes = [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["t"]),
             helper.make_node("Sigmoid", ["t"], ["u"]),
             helper.make_node("Pad", ["u", "p"], ["padded"], mode="edge"),
             helper.make_node("InstanceNormalization", ["padded", "s", "b"], ["normed"]),
             helper.make_node("Sub", ["padded", "normed"], ["y"])]
    weights = _weights(10, s=(C,), b=(C,), m=(C,)) + [("v", np.linspace(0.5, 2, C, dtype=np.float32)),
                                                      ("p", np.array([0, 0, 1, 0, 2, 0, 0, 0, 1, 1], np.int64))]
    model = make_model(nodes, [("x", [n, C, 3, 4, 5])], [("y", [n, C, 4, 5, 8])], weights)
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["batch_merged_into_channels"] == 5
    assert "Reshape" not in ncnn_layer_types(converted)
    io = converted.io()
    assert [e["ncnn_shape"] for e in io["inputs"] + io["outputs"]] == [[n * C, 3, 4, 5], [n * C, 4, 5, 8]]
    assert io["inputs"][0]["onnx_shape"] == [n, C, 3, 4, 5]
    check_interpreter_matches_ncnn(converted, model, tmp_path)


@pytest.mark.parametrize("n", [2, 3])
def test_five_axis_views_are_read_past(tmp_path, n):
    """torch's LRN pattern: [N, C, H, W] viewed as [N, 1, C, H, W], padded and normalized as one
    channel, viewed back. The merge Reshapes read past both views, so no five-axis blob is left."""
    nodes = [helper.make_node("Unsqueeze", ["x", "axis1"], ["view"]),
             helper.make_node("Pad", ["view", "p"], ["padded"]),
             helper.make_node("BatchNormalization", ["padded", "s", "b", "m", "v"], ["normed"]),
             helper.make_node("Reshape", ["normed", "back"], ["y"])]
    weights = [("axis1", np.array([1], np.int64)), ("p", np.array([0, 0, 1, 0, 0, 0, 0, 2, 0, 0], np.int64)),
               ("s", np.float32([1.5])), ("b", np.float32([0.25])), ("m", np.float32([0.1])), ("v", np.float32([2.0])),
               ("back", np.array([n, C + 3, 6, 7], np.int64))]
    model = make_model(nodes, [("x", [n, C, 6, 7])], [("y", None)], weights)
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["batch_merged_into_channels"] == 2
    # (the merged [1, N, C, H, W] is the input's own ncnn shape (N, C, H, W): the Reshapes are Noops,
    # which eliminate_noop drops)
    assert ncnn_layer_types(converted) == ["Input", "Padding", "BatchNorm"]
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_one_file_runs_every_image_size(tmp_path):
    """Run-time H and W (the batch and channels are known): the Reshapes copy them (0)."""
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("MaxPool", ["c"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("InstanceNormalization", ["p", "s", "b"], ["y"])]
    model = make_model(nodes, [("x", [2, C, "H", "W"])], [("y", None)], _weights(12, w=(3, C, 3, 3), s=(3,), b=(3,)))
    converted = assert_one_file_many_sizes(model, tmp_path, [(8, 10), (12, 6)])
    assert converted.stats["batch_merged_into_channels"] == 3


def test_verify_feeds_a_merged_input_in_its_onnx_shape():
    """verify makes onnxruntime's inputs in the ONNX shape [N, C, D, H, W] and ncnn's merged."""
    weights = _weights(14, s=(C,), b=(C,))
    model = single_op(2, "InstanceNormalization", (3, 4, 5), inputs=["s", "b"], weights=weights)
    report = verify(model, backend="both")
    assert report.passed and report.inputs == {"x": [2, C, 3, 4, 5]}


def test_batch_one_is_left_alone():
    converted = convert(CASES["MaxPool"](1))
    assert converted.stats["batch_merged_into_channels"] == 0
    assert "Reshape" not in ncnn_layer_types(converted)


@pytest.mark.parametrize("model, why", [
    # the indices number positions in the whole [N, C, H, W] input, not in one merged plane
    (make_model([helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2])],
                [("x", [2, C, 6, 6])], [("y", [2, C, 5, 5])]), "batch axis"),
    # LRN's window runs across channels, which must not reach into the next item
    (single_op(2, "LRN", size=3), "batch axis"),
    # DCR numbers the output channels inside each block pixel: a merged block would span items
    (single_op(2, "DepthToSpace", blocksize=2, mode="DCR"), "batch axis"),
    # padding the channels of a 5-axis input: its items cannot merge into the channels
    (single_op(2, "Pad", (3, 4, 5), inputs=["p"], weights=[("p", np.array([0, 1, 0, 0, 0] * 2, np.int64))]),
     "at most 4"),

])
def test_near_misses_are_refused_in_one_line(model, why):
    with pytest.raises(ConversionError) as err:
        convert(model)
    assert why in str(err.value) and "\n" not in str(err.value)
