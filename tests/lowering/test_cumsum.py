"""ONNX CumSum as ncnn CumulativeSum, in real ncnn and the interpreter against onnxruntime."""
import numpy as np
import pytest
from onnx import helper

from converter import convert
from converter.ir import ConversionError
from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model

CASES = [((1, 3, 4, 5), 1), ((1, 3, 4, 5), 3), ((1, 3, 4, 5), -2), ((1, 3, 4, 5), 0),   # 0: the batch axis
         ((2, 6), 0), ((2, 6), 1), ((7,), 0), ((1, 2, 3, 4, 5), 2)]


def cumsum_model(shape, axis, reverse=0, exclusive=0):
    node = helper.make_node("CumSum", ["x", "axis"], ["y"], reverse=reverse, exclusive=exclusive)
    return make_model([node], [("x", shape)], [("y", None)], [("axis", np.array(axis, np.int64))])


@pytest.mark.parametrize("reverse", [0, 1], ids=["forward", "reverse"])
@pytest.mark.parametrize("shape,axis", CASES, ids=str)
def test_cumsum(tmp_path, shape, axis, reverse):
    model = cumsum_model(shape, axis, reverse)
    converted = check_in_ncnn(model, tmp_path, rtol=1e-5, atol=1e-5)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_exclusive_cumsum_is_refused_by_name():
    with pytest.raises(ConversionError, match="CumSum node .*exclusive=1"):
        convert(cumsum_model((1, 3, 4), 2, exclusive=1))
