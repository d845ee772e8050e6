"""torch.stack over a batch ncnn keeps (2, C, H, W) -> (2, k, C, H, W): Concat ties the axes it does not
concatenate, so the five axes merge to fit (passes/merge_wide_axes.py); real ncnn and the interpreter
against onnxruntime."""
import numpy as np
import pytest
from onnx import helper

from converter import ConversionError, convert
from onnx_cases import assert_matches_reference, make_model, random_inputs, run_converted_in_ncnn, to_ncnn


def stack_model(axis, relu=True):
    nodes = [helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[1, 1]),
             helper.make_node("Unsqueeze", ["p", "ax"], ["u0"]),
             helper.make_node("Unsqueeze", ["x", "ax"], ["u1"]),
             helper.make_node("Concat", ["u0", "u1"], ["c" if relu else "y"], axis=axis)]
    if relu:
        nodes.append(helper.make_node("Relu", ["c"], ["y"]))
    return make_model(nodes, [("x", [2, 3, 5, 7])], [("y", None)], [("ax", np.array([axis], np.int64))])


@pytest.mark.parametrize("axis", [1, 2, -1])
def test_stack_over_a_kept_batch(axis, tmp_path):
    model = stack_model(axis)
    feeds = random_inputs(model)
    converted, outputs = run_converted_in_ncnn(model, feeds, tmp_path)
    assert_matches_reference(model, feeds, outputs)
    io = converted.io()
    ours = converted.run({e["ncnn"]: to_ncnn(feeds[e["onnx"]], e) for e in io["inputs"]}, layout="ncnn")
    assert_matches_reference(model, feeds, {e["onnx"]: ours[e["ncnn"]] for e in io["outputs"]})
    assert converted.stats["merged_wide_tensors"] >= 2


def test_five_separate_axes_still_refused():
    """Concatenating along axis 3 of [2, 1, 3, 5, 7] pieces stacked at 1: both cuts keep 5 axes apart."""
    nodes = [helper.make_node("Unsqueeze", ["x", "ax"], ["u"]),
             helper.make_node("Concat", ["u", "u"], ["c"], axis=1),
             helper.make_node("Concat", ["c", "c"], ["y"], axis=3)]
    model = make_model(nodes, [("x", [2, 3, 5, 7])], [("y", None)], [("ax", np.array([1], np.int64))])
    with pytest.raises(ConversionError, match="would need 5 ncnn axes") as info:
        convert(model)
    assert "\n" not in str(info.value)
