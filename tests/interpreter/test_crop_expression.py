"""Crop 19/20/21 (starts/ends/axes expressions): the interpreter crops what the real ncnn crops."""
import numpy as np
import pytest

from converter.interpreter import InterpreterError

from .layer_check import check, interpret

# (data shape, reference blob shape or None, starts, ends, axes): ncnn axes in numpy order
CASES = [
    ((6, 5, 7), None, "1", "-(0w,2)", "2"),                        # w: [1, w-2)
    ((6, 5, 7), None, "0,1", "//(0c,2),0h", "0,1"),                 # c: first half; h: [1, h)
    ((6, 5, 7), None, "-2", "2147483647", "-1"),                     # the last two along w, negative axis
    ((4, 9), (3,), "1w", "+(1w,4)", "1"),                           # reads the second blob's w
    ((4, 9), (2, 3), "0,1h", "*(1h,2),*(1w,2)", "0,1"),
    ((12,), (5,), "//(1w,2)", "+(1w,3)", "0"),                       # 1-D
    ((2, 3, 6, 8), None, "1,2", "0d,min(0w,5)", "1,3"),              # 4-D, d and w
    ((5, 6, 7), None, "1,1,1", "-1,-1,-1", "0,1,2"),
]


@pytest.mark.parametrize("shape, ref_shape, starts, ends, axes", CASES)
def test_crop_expression_matches_ncnn(tmp_path, rng, shape, ref_shape, starts, ends, axes):
    x = rng.standard_normal(shape).astype(np.float32)
    inputs = [x] if ref_shape is None else [x, rng.standard_normal(ref_shape).astype(np.float32)]
    params = {19: starts, 20: ends, 21: axes}
    check(tmp_path, "Crop", params, inputs, exact=True)


def test_extra_blob_for_a_one_blob_expression_is_refused_like_ncnn(tmp_path):
    from converter.ncnn_side.runtime import NcnnError
    from .layer_check import one_layer_graph, run_real
    x = np.zeros((4, 6), np.float32)
    params = {19: "1", 20: "0w", 21: "1"}
    graph, feeds = one_layer_graph("Crop", params, [x, x])
    with pytest.raises(NcnnError):
        run_real(tmp_path, graph, feeds)
    with pytest.raises(InterpreterError, match="one_blob_only"):
        interpret("Crop", params, [x, x])


def test_expressions_without_axes_are_refused(tmp_path):
    """Measured: the real runtime crashed (segmentation fault) on starts/ends expressions without 21=."""
    with pytest.raises(InterpreterError, match="axes expression"):
        interpret("Crop", {19: "1", 20: "-1"}, [np.zeros((5, 6), np.float32)])


def test_bad_crop_expression_is_a_clear_error():
    with pytest.raises(InterpreterError, match="Crop expression"):
        interpret("Crop", {19: "1w", 20: "2", 21: "0"}, [np.zeros((4,), np.float32)])
