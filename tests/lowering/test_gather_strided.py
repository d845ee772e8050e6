"""Constant Gather indices with more runs than Crops are allowed, as strided slices
(lowering/gather_strided.py): torch's unfold index rows; real ncnn and the interpreter bit for bit."""
import numpy as np
import pytest
from onnx import helper

from converter import convert
from converter.ir import ConversionError
from converter.lowering.gather_strided import progressions
from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model, ncnn_layer_types


def gather_model(shape, indices, axis):
    node = helper.make_node("Gather", ["x", "i"], ["y"], axis=axis)
    return make_model([node], [("x", shape)], [("y", None)], [("i", np.array(indices, np.int64))])


def test_progressions():
    assert progressions([0, 2, 4, 6, 1, 3, 5]) == [(0, 4, 2), (1, 3, 2)]
    assert progressions([5, 5, 6, 9, 12, 0]) == [(5, 1, 1), (5, 2, 1), (9, 2, 3), (0, 1, 1)]


CASES = {
    "unfold_rows_stride2": ((1, 3, 22, 5), [list(range(0, 22, 2)), list(range(1, 22, 2))], 2),
    "last_axis_stride3": ((1, 4, 40), list(range(0, 40, 3)) + list(range(2, 40, 3)), 2),
    "mixed": ((1, 2, 6, 50), list(range(0, 50, 4)) + [7, 8, 9] + list(range(49, 30, -6)) + [1] * 3, 3),
}


@pytest.mark.parametrize("case", CASES)
def test_strided_gather_in_real_ncnn(case, tmp_path):
    model = gather_model(*CASES[case])
    converted = check_in_ncnn(model, tmp_path, rtol=0, atol=0)
    assert ncnn_layer_types(converted).count("Crop") < 17
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_scattered_indices_are_refused_in_one_line():
    indices = np.random.default_rng(0).permutation(40)
    with pytest.raises(ConversionError, match=r"separate index ranges \(\d+ strided ones\)") as info:
        convert(gather_model((1, 3, 40), indices, 2))
    assert "\n" not in str(info.value)
