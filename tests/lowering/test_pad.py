"""ONNX Pad -> ncnn Padding, in real ncnn against onnxruntime (and the interpreter against real ncnn)."""
import numpy as np
import pytest
from onnx import helper

from converter import convert
from converter.ir import ConversionError
from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model


def pad_model(shape, pads, mode, value=None, opset=13):
    inputs = ["x", "p"] + (["v"] if value is not None else [])
    inits = [("p", np.array(pads, np.int64))] + ([("v", np.array(value, np.float32))] if value is not None else [])
    return make_model([helper.make_node("Pad", inputs, ["y"], mode=mode)], [("x", shape)], [("y", None)], inits,
                      opset=opset)


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
@pytest.mark.parametrize("shape, pads", [
    ([1, 3, 5, 6], [0, 0, 1, 2, 0, 0, 2, 1]),       # h and w
    ([1, 3, 5, 6], [0, 1, 0, 0, 0, 2, 0, 0]),       # channels of a 3-D blob
    ([1, 2, 7], [0, 0, 3, 0, 0, 2]),                # 1-D signal: w of a 2-D blob (silero's stft)
    ([1, 7], [0, 2, 0, 3]),                         # 1-D blob
    ([1, 2, 3, 4, 5], [0, 0, 1, 0, 1, 0, 0, 1, 1, 2]),   # d, h, w of a 4-D blob
])
def test_pad_modes(tmp_path, mode, shape, pads):
    model = pad_model(shape, pads, mode, value=1.5 if mode == "constant" else None)
    converted = check_in_ncnn(model, tmp_path)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_pad_opset2_attributes(tmp_path):
    model = make_model([helper.make_node("Pad", ["x"], ["y"], pads=[0, 0, 1, 1, 0, 0, 1, 1], value=2.0)],
                       [("x", [1, 2, 3, 4])], [("y", None)], opset=2)
    check_in_ncnn(model, tmp_path)


@pytest.mark.parametrize("shape, pads, why", [
    ([1, 3, 5, 6], [1, 0, 0, 0, 0, 0, 0, 0], "batch axis"),
    ([1, 3, 5, 6], [0, 0, -1, 0, 0, 0, 0, 0], "negative"),
    ([1, 2, 3, 4, 5], [0, 1, 0, 0, 0, 0, 0, 0, 0, 0], "channel axis of a 4-D"),
])
def test_pad_refusals(shape, pads, why):
    with pytest.raises(ConversionError, match=why):
        convert(pad_model(shape, pads, "constant"))
