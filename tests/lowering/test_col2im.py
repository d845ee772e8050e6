"""Col2Im -> ncnn Fold: strides, dilations, pads, a batch run per sample; real ncnn and the
interpreter against onnxruntime."""
import numpy as np
import pytest
from onnx import helper

from converter import convert
from converter.ir import ConversionError
from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model, ncnn_layer_types


def col2im_model(x_shape, image, block, **attrs):
    node = helper.make_node("Col2Im", ["x", "image", "block"], ["y"], **attrs)
    return make_model([node], [("x", x_shape)], [("y", None)],
                      [("image", np.array(image, np.int64)), ("block", np.array(block, np.int64))], opset=18)


CASES = {
    "plain": ((1, 2 * 9, 16), (6, 6), (3, 3), {}),
    "strided_padded": ((1, 3 * 4, 210), (17, 18), (2, 2), {"strides": [2, 1], "pads": [2, 2, 2, 2]}),
    "dilated_uneven_pads": ((1, 2 * 6, 120), (5, 11), (2, 3), {"dilations": [1, 2], "pads": [2, 4, 2, 4]}),
    "batch_2": ((2, 2 * 4, 25), (6, 6), (2, 2), {}),
}


@pytest.mark.parametrize("case", CASES)
def test_col2im_in_real_ncnn(case, tmp_path):
    x_shape, image, block, attrs = CASES[case]
    model = col2im_model(x_shape, image, block, **attrs)
    converted = check_in_ncnn(model, tmp_path)
    assert ncnn_layer_types(converted).count("Fold") == x_shape[0]
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_a_3d_image_is_refused_in_one_line():
    with pytest.raises(ConversionError, match=r"Col2Im node .*(2-D images only|5 ncnn axes)") as info:
        convert(col2im_model((1, 8, 8), (3, 3, 3), (2, 2, 2)))
    assert "\n" not in str(info.value)
