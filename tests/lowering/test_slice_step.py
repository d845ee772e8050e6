"""Slice with steps other than 1 (Flip for negative steps, a grouped Crop for steps > 1) against onnxruntime."""
import numpy as np
import pytest
from onnx import helper

from converter import ConversionError
from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model

BIG = np.iinfo(np.int64).max
SMALL = np.iinfo(np.int64).min


def slice_model(x_shape, starts, ends, axes, steps):
    consts = {"starts": starts, "ends": ends, "axes": axes, "steps": steps}
    node = helper.make_node("Slice", ["x", *consts], ["y"])
    inits = [(n, np.asarray(v, np.int64)) for n, v in consts.items()]
    return make_model([node], [("x", x_shape)], [("y", None)], inits)


CASES = [
    ((1, 3, 8, 8), [0, 0], [BIG, BIG], [2, 3], [2, 2]),        # YOLOv5's Focus: every other row and column
    ((1, 3, 8, 8), [1, 1], [BIG, BIG], [2, 3], [2, 2]),
    ((1, 3, 7, 9), [0], [BIG], [3], [3]),                      # the last run would pass the end
    ((1, 3, 7, 9), [2], [8], [3], [4]),
    ((1, 3, 7, 9), [1], [6], [2], [5]),                        # one element
    ((1, 6, 5), [0], [BIG], [1], [4]),
    ((1, 5), [-1], [SMALL], [1], [-1]),                        # reverse
    ((1, 3, 7, 9), [-1], [SMALL], [2], [-1]),
    ((1, 3, 7, 9), [BIG, -2], [SMALL, 0], [1, 3], [-1, -3]),
    ((1, 3, 7, 9), [6], [1], [2], [-2]),
    ((4, 5), [3, 0], [SMALL, BIG], [0, 1], [-2, 2]),
    ((1, 2, 3, 4, 6), [0], [BIG], [4], [2]),
    ((10,), [1], [9], [0], [3]),
]


@pytest.mark.parametrize("x_shape,starts,ends,axes,steps", CASES, ids=str)
def test_slice_with_steps(x_shape, starts, ends, axes, steps, tmp_path):
    model = slice_model(x_shape, starts, ends, axes, steps)
    converted = check_in_ncnn(model, tmp_path)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_slice_step_on_unknown_extent_is_refused(tmp_path):
    with pytest.raises(ConversionError, match=r"Slice node .*steps needs the extent"):
        check_in_ncnn(slice_model([1, 3, "T"], [0], [BIG], [2], [2]), tmp_path, dims={"T": 6})


@pytest.mark.parametrize("start", [0, 1])
def test_slice_step_beside_one_run_time_extent(start, tmp_path):
    """Cohere's interleaved rotary takes x[..., 0::2] and x[..., 1::2] of (1, H, T, D), T a run-time
    length: the sliced axis is known, and each Reshape infers the one unknown extent."""
    model = slice_model([1, 4, "T", 16], [start], [BIG], [3], [2])
    for t in (1, 5):
        check_in_ncnn(model, tmp_path, dims={"T": t})


def test_slice_step_beside_two_run_time_extents_is_refused(tmp_path):
    """Two unknown extents: no Reshape infers both."""
    with pytest.raises(ConversionError, match=r"Slice node .*steps needs every extent"):
        check_in_ncnn(slice_model([1, "H", "T", 16], [0], [BIG], [3], [2]), tmp_path, dims={"H": 2, "T": 3})
