"""Pad -> ncnn Padding (+ Crop for negative pads), real ncnn against onnxruntime."""
import numpy as np
import pytest
from onnx import helper

from converter import convert
from converter.ir import ConversionError
from onnx_cases import (assert_one_file_many_sizes, check_in_ncnn, check_interpreter_matches_ncnn,
                        make_model, ncnn_layer_types)


def pad_model(x_shape, pads, mode="constant", value=None, axes=None, opset=18):
    inits = [("pads", np.array(pads, np.int64))]
    names = ["x", "pads"]
    if value is not None or axes is not None:
        names.append("value" if value is not None else "")
        if value is not None:
            inits.append(("value", np.array(value, np.float32)))
    if axes is not None:
        names.append("axes")
        inits.append(("axes", np.array(axes, np.int64)))
    node = helper.make_node("Pad", names, ["y"], mode=mode)
    return make_model([node], [("x", x_shape)], [("y", None)], inits, opset=opset)


CASES = {
    "hw": ((1, 3, 4, 5), [0, 0, 1, 2, 0, 0, 2, 1], None, None),
    "w_only_value": ((1, 3, 4, 5), [0, 0, 0, 3, 0, 0, 0, 1], -1.5, None),
    "channels": ((1, 3, 4, 5), [0, 2, 1, 0, 0, 1, 0, 2], 0.5, None),
    "axes": ((1, 3, 4, 5), [1, 2, 3, 0], 2.0, [2, -1]),
    "rank2": ((1, 6), [0, 2, 0, 3], None, None),
    "rank3": ((1, 4, 6), [0, 1, 2, 0, 2, 1], None, None),
    "rank5_depth": ((1, 2, 3, 4, 5), [0, 0, 1, 1, 0, 0, 0, 2, 1, 1], None, None),
    "no_batch_rank2": ((3, 4), [1, 2, 2, 0], None, None),
    "crop": ((1, 3, 6, 7), [0, 0, -1, -2, 0, 0, -2, 0], None, None),
    "crop_and_pad": ((1, 3, 6, 7), [0, -1, 2, -1, 0, 1, -1, 2], None, None),
}


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
@pytest.mark.parametrize("name", CASES)
def test_pad_in_real_ncnn(tmp_path, name, mode):
    x_shape, pads, value, axes = CASES[name]
    model = pad_model(x_shape, pads, mode, value, axes)
    converted = check_in_ncnn(model, tmp_path)
    types = ncnn_layer_types(converted)
    assert ("Padding" in types) == any(p > 0 for p in pads)
    assert ("Crop" in types) == any(p < 0 for p in pads)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_pad_old_attribute_form(tmp_path):
    node = helper.make_node("Pad", ["x"], ["y"], pads=[0, 0, 1, 2, 0, 0, 0, 1], value=3.0)
    model = make_model([node], [("x", (1, 2, 3, 4))], [("y", None)], opset=2)
    check_in_ncnn(model, tmp_path)


@pytest.mark.parametrize("mode", ["constant", "reflect"])
def test_pad_dynamic_size_one_file_many_sizes(tmp_path, mode):
    model = pad_model((1, 3, "H", "W"), [0, 1, 1, 0, 0, 0, -1, 2], mode)
    assert_one_file_many_sizes(model, tmp_path, [(4, 5), (7, 3)])


@pytest.mark.parametrize("x_shape,pads,mode,match", [
    ((1, 3, 4, 5), [1, 0, 0, 0, 0, 0, 0, 0], "constant", "batch axis"),
    ((1, 2, 3, 4, 5), [0, 1, 0, 0, 0, 0, 0, 0, 0, 0], "constant", "channel axis of a 4-axis"),
    ((1, 3, 4, 5), [0, 0, 0, 5, 0, 0, 0, 0], "reflect", "need more than 5 values"),
    ((1, 3, 4, 5), [0, 0, 0, 1, 0, 0, 0, 0], "wrap", "constant, edge and reflect only"),
], ids=["batch", "channel_4d", "reflect_too_far", "wrap"])
def test_pad_refusals(x_shape, pads, mode, match):
    with pytest.raises(ConversionError, match=f"Pad node.*{match}"):
        convert(pad_model(x_shape, pads, mode, opset=19))
