"""Interp against the real ncnn: nearest / bilinear / bicubic, align_corner, scales and sizes."""
import numpy as np
import pytest

from converter.interpreter import InterpreterError

from .layer_check import check, ids, interpret

SIZES = [
    dict(output_height=12, output_width=10),
    dict(output_height=3, output_width=4),
    dict(output_height=7, output_width=13),
    dict(output_height=5, output_width=6),          # same as the input: passed through
    dict(height_scale=2.0, width_scale=2.0),
    dict(height_scale=0.5, width_scale=1.5),
    dict(height_scale=1.7, width_scale=0.6),
    dict(output_width=9, height_scale=2.0, width_scale=3.0),   # one size only: ncnn uses the scales
]


@pytest.mark.parametrize("size", SIZES, ids=lambda d: ",".join(f"{k}={v}" for k, v in d.items()))
@pytest.mark.parametrize("resize_type,align_corner", [(1, 0), (2, 0), (2, 1), (3, 0), (3, 1)],
                         ids=["nearest", "bilinear", "bilinear-align", "bicubic", "bicubic-align"])
def test_interp_3d(tmp_path, rng, resize_type, size, align_corner):
    params = ids("Interp", resize_type=resize_type, align_corner=align_corner, **size)
    check(tmp_path, "Interp", params, [rng.standard_normal((3, 5, 6)).astype(np.float32)], rtol=1e-5)


@pytest.mark.parametrize("resize_type", [1, 2, 3], ids=["nearest", "bilinear", "bicubic"])
def test_interp_packed_channels(tmp_path, rng, resize_type):
    params = ids("Interp", resize_type=resize_type, output_height=9, output_width=7)
    check(tmp_path, "Interp", params, [rng.standard_normal((16, 4, 5)).astype(np.float32)], rtol=1e-5)


@pytest.mark.parametrize("size", [dict(output_height=1, output_width=9), dict(output_width=3, output_height=4),
                                  dict(width_scale=2.5, height_scale=1.0)], ids=str)
@pytest.mark.parametrize("resize_type", [1, 2, 3], ids=["nearest", "bilinear", "bicubic"])
def test_interp_2d_resizes_w_only(tmp_path, rng, resize_type, size):
    params = ids("Interp", resize_type=resize_type, **size)
    check(tmp_path, "Interp", params, [rng.standard_normal((4, 6)).astype(np.float32)], rtol=1e-5)


def test_interp_1d_fills_channels(tmp_path, rng):
    params = ids("Interp", resize_type=2, height_scale=3.0, width_scale=2.0)
    out = check(tmp_path, "Interp", params, [rng.standard_normal(5).astype(np.float32)], exact=True)["out0"]
    assert out.shape == (5, 3, 2)


@pytest.mark.parametrize("resize_type", [1, 2, 3], ids=["nearest", "bilinear", "bicubic"])
def test_interp_to_reference_blob(tmp_path, rng, resize_type):
    """With a reference blob nearest still steps by 1/scale, not size/out."""
    params = ids("Interp", resize_type=resize_type, dynamic_target_size=1)
    x, ref = rng.standard_normal((3, 4, 5)).astype(np.float32), np.zeros((2, 8, 7), np.float32)
    check(tmp_path, "Interp", params, [x, ref], rtol=1e-5)


@pytest.mark.parametrize("resize_type", [1, 2], ids=["nearest", "bilinear"])
def test_step_is_one_over_scale_unless_a_size_is_given(tmp_path, resize_type):
    """The source step is 1/width_scale when the size comes from the scale, but w/outw as
    soon as output_width is a param, even when ncnn still takes outw from the scale
    (output_height=0). For 5 -> 8 pixels at scale 1.7 the two steps pick different pixels."""
    ramp = np.broadcast_to(np.arange(5, dtype=np.float32), (1, 2, 5)).copy()
    by_scale = check(tmp_path, "Interp", ids("Interp", resize_type=resize_type, width_scale=1.7), [ramp],
                     rtol=1e-6)["out0"][0, 0]
    by_size = check(tmp_path, "Interp", ids("Interp", resize_type=resize_type, width_scale=1.7, output_width=9),
                    [ramp], rtol=1e-6)["out0"][0, 0]
    assert by_scale.shape == by_size.shape == (8,)
    if resize_type == 1:
        np.testing.assert_array_equal(by_scale, [0, 0, 1, 1, 2, 2, 3, 4])
        np.testing.assert_array_equal(by_size, [0, 0, 1, 1, 2, 3, 3, 4])
    else:
        np.testing.assert_allclose(by_scale[1:-1], (np.arange(1, 7) + 0.5) / 1.7 - 0.5, rtol=1e-6)
        np.testing.assert_allclose(by_size[1:-1], (np.arange(1, 7) + 0.5) * 5 / 8 - 0.5, rtol=1e-6)


def test_bicubic_on_tiny_input_raises():
    params = ids("Interp", resize_type=3, output_height=4, output_width=4)
    with pytest.raises(InterpreterError, match="too small"):
        interpret("Interp", params, [np.zeros((1, 1, 1), np.float32)])


# size_expr: [outw] (outh stays the input's h) or [outw, outh], from the bottom blobs' shapes
EXPRESSIONS = ["*(0w,2),*(0h,2)", "+(0w,3)", "7,5", "*(0w,1.5),0h", "0w,*(0h,3)", "//(0w,2),0h"]


@pytest.mark.parametrize("expr", EXPRESSIONS)
@pytest.mark.parametrize("resize_type", [1, 2, 3], ids=["nearest", "bilinear", "bicubic"])
def test_interp_size_expression(tmp_path, rng, resize_type, expr):
    params = ids("Interp", resize_type=resize_type, size_expr=expr)
    check(tmp_path, "Interp", params, [rng.standard_normal((3, 5, 6)).astype(np.float32)], rtol=1e-5)


@pytest.mark.parametrize("expr", ["1w,1h", "*(1w,2),0h", "+(0w,1w)"])
@pytest.mark.parametrize("resize_type", [1, 2], ids=["nearest", "bilinear"])
def test_interp_size_expression_reads_second_blob(tmp_path, rng, resize_type, expr):
    params = ids("Interp", resize_type=resize_type, size_expr=expr)
    x, ref = rng.standard_normal((3, 5, 6)).astype(np.float32), np.zeros((2, 9, 4), np.float32)
    check(tmp_path, "Interp", params, [x, ref], rtol=1e-5)


@pytest.mark.parametrize("expr", ["1w,2h", "*(1h,2w),1", "2w,+(1c,1h)"])
def test_interp_fill_sized_by_two_other_blobs(tmp_path, rng, expr):
    """The run-time fill (lowering/fill.py): a 1-D blob's values fill channels to sizes read from
    two more blobs."""
    params = ids("Interp", resize_type=1, size_expr=expr)
    x = rng.standard_normal(3).astype(np.float32)
    a, b = np.zeros((2, 9, 4), np.float32), np.zeros((5, 6), np.float32)
    check(tmp_path, "Interp", params, [x, a, b], exact=True)


@pytest.mark.parametrize("resize_type", [1, 2, 3], ids=["nearest", "bilinear", "bicubic"])
def test_interp_size_expression_on_2d_blob(tmp_path, rng, resize_type):
    params = ids("Interp", resize_type=resize_type, size_expr="*(0w,3)")
    check(tmp_path, "Interp", params, [rng.standard_normal((4, 5)).astype(np.float32)], rtol=1e-5)


def test_interp_size_expression_with_three_sizes_is_an_error():
    params = ids("Interp", resize_type=1, size_expr="1,2,3")
    with pytest.raises(InterpreterError, match="gives 3 sizes"):
        interpret("Interp", params, [np.zeros((1, 2, 2), np.float32)])
