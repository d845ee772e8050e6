"""Unfold and Fold against the real ncnn: kernel, dilation, stride and pad variants."""
import numpy as np
import pytest

from converter.interpreter import InterpreterError

from .layer_check import check, ids, interpret

# (kernel_w, kernel_h, dilation_w, dilation_h, stride_w, stride_h, pad_left, pad_right, pad_top, pad_bottom)
GEOMETRIES = [
    (3, 3, 1, 1, 1, 1, 0, 0, 0, 0),
    (2, 3, 1, 1, 2, 1, 1, 1, 1, 1),
    (3, 2, 2, 1, 1, 2, 0, 2, 1, 0),
    (2, 2, 1, 2, 2, 2, 1, 0, 0, 2),
    (1, 1, 1, 1, 3, 2, 0, 0, 0, 0),
]
NAMES = ("kernel_w", "kernel_h", "dilation_w", "dilation_h", "stride_w", "stride_h",
         "pad_left", "pad_right", "pad_top", "pad_bottom")


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=str)
def test_unfold(tmp_path, rng, geometry):
    x = rng.uniform(-3, 3, (3, 7, 8)).astype(np.float32)
    check(tmp_path, "Unfold", ids("Unfold", **dict(zip(NAMES, geometry)), pad_value=1.5), [x], exact=True)


@pytest.mark.parametrize("same", [-233, -234], ids=["same_upper", "same_lower"])
@pytest.mark.parametrize("stride", [1, 2, 3])
def test_unfold_same_padding(tmp_path, rng, same, stride):
    x = rng.uniform(-3, 3, (2, 7, 8)).astype(np.float32)
    check(tmp_path, "Unfold", ids("Unfold", kernel_w=3, kernel_h=2, stride_w=stride, pad_left=same,
                                  pad_value=-2.0), [x], exact=True)


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=str)
def test_fold(tmp_path, rng, geometry):
    p = dict(zip(NAMES, geometry))
    out_h, out_w = 7, 8
    inh = (out_h + p["pad_top"] + p["pad_bottom"] - p["dilation_h"] * (p["kernel_h"] - 1) - 1) // p["stride_h"] + 1
    inw = (out_w + p["pad_left"] + p["pad_right"] - p["dilation_w"] * (p["kernel_w"] - 1) - 1) // p["stride_w"] + 1
    x = rng.uniform(-3, 3, (2 * p["kernel_w"] * p["kernel_h"], inh * inw)).astype(np.float32)
    check(tmp_path, "Fold", ids("Fold", **p, output_w=out_w, output_h=out_h), [x], exact=True)


def test_fold_inverts_unfold_up_to_overlap_counts(tmp_path, rng):
    # kernel 2 stride 2: taps do not overlap, so fold(unfold(x)) == x
    x = rng.uniform(-3, 3, (3, 6, 8)).astype(np.float32)
    cols = interpret("Unfold", ids("Unfold", kernel_w=2, stride_w=2), [x])["out0"]
    back = check(tmp_path, "Fold", ids("Fold", kernel_w=2, stride_w=2, output_w=8, output_h=6), [cols], exact=True)
    np.testing.assert_array_equal(back["out0"], x)


def test_fold_of_the_wrong_width_is_refused():
    with pytest.raises(InterpreterError, match="does not hold 4 taps x 3x3 positions"):
        interpret("Fold", ids("Fold", kernel_w=2, output_w=4), [np.ones((8, 10), np.float32)])
