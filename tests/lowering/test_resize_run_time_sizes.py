"""Resize to sizes computed from run-time extents (torch's `F.interpolate(x, size=y.shape[-2:])`):
express_shapes keeps them as terms, the lowering writes one Interp whose 9= expression reads the
other blob. One converted file, several sizes, real ncnn and the interpreter against onnxruntime."""
import numpy as np
import pytest
from onnx import helper

from converter import convert
from converter.ir import ConversionError
from onnx_cases import assert_one_file_many_sizes, make_model

I64 = lambda v: np.array(v, np.int64)  # noqa: E731


def resize_to_model(mode, transform, from_conv=False):
    """z = Resize(x, sizes=x.shape[:2] + y.shape[2:]); x is an input of its own (h, w), or y's stride-2
    conv (an FPN's top-down step: the output extent is the one the input was made from)."""
    nodes, inits = [], [("st", I64([0])), ("mid", I64([2])), ("end", I64([4]))]
    inputs = [("y", [1, 2, "H", "W"])]
    if from_conv:
        nodes.append(helper.make_node("Conv", ["y", "k"], ["x"], strides=[2, 2], pads=[1, 1, 1, 1]))
        inits.append(("k", np.random.default_rng(0).normal(size=(3, 2, 3, 3)).astype(np.float32)))
    else:
        inputs.append(("x", [1, 3, "h", "w"]))
    nodes += [helper.make_node("Shape", ["x"], ["sx"]), helper.make_node("Slice", ["sx", "st", "mid"], ["nc"]),
              helper.make_node("Shape", ["y"], ["sy"]), helper.make_node("Slice", ["sy", "mid", "end"], ["hw"]),
              helper.make_node("Concat", ["nc", "hw"], ["sizes"], axis=0),
              helper.make_node("Resize", ["x", "", "", "sizes"], ["z"], mode=mode, nearest_mode="floor",
                               coordinate_transformation_mode=transform)]
    return make_model(nodes, inputs, [("z", None)], inits)


def interps(converted):
    return [n for n in converted.graph.nodes.values() if n.op == "Interp"]


def test_bilinear_to_another_blobs_run_time_size(tmp_path):
    """Up, down and mixed: (h, w) -> (H, W)."""
    model = resize_to_model("linear", "half_pixel")
    converted = assert_one_file_many_sizes(model, tmp_path, [(4, 5, 7, 9), (6, 6, 3, 4), (5, 3, 5, 8)],
                                           dims=("H", "W", "h", "w"))
    [interp] = interps(converted)
    assert interp.params[9] == "1w,1h" and len(interp.inputs) == 2, interp
    assert len(converted.graph.nodes) == 3         # the two inputs and the Interp: no shape math left


@pytest.mark.parametrize("mode,why", [
    # onnxruntime's floor(x / (out/in)) and ncnn's floor(x * (in/out)) part at some extents (14 -> 16)
    ("nearest", "different source pixels"),
    ("cubic", "cannot resize an extent of 1"),      # ncnn's four taps need an extent of 2 or more
])
def test_unrelated_run_time_sizes_ncnn_cannot_match_are_refused(mode, why):
    with pytest.raises(ConversionError, match=f"Resize node .*{why}"):
        convert(resize_to_model(mode, "asymmetric" if mode == "nearest" else "half_pixel"))


def test_nearest_to_the_size_a_stride_2_conv_came_from(tmp_path):
    """The input is (H - 1) // 2 + 1 of the output's H: only those pairs can meet, and ncnn agrees at
    all of them."""
    converted = assert_one_file_many_sizes(resize_to_model("nearest", "asymmetric", from_conv=True), tmp_path,
                                           [(8, 8), (7, 13), (13, 6)])
    [interp] = interps(converted)
    assert interp.params[9] == "1w,1h" and len(interp.inputs) == 2, interp
