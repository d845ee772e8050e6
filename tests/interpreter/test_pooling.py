"""Pooling against the real ncnn: max/avg, pad modes 0-3, count_include_pad, global, adaptive."""
import numpy as np
import pytest

from .layer_check import check, ids

WINDOWS = [
    dict(kernel_w=2, stride_w=2),
    dict(kernel_w=3, stride_w=2),
    dict(kernel_w=3, stride_w=1),
    dict(kernel_w=3, kernel_h=2, stride_w=2, stride_h=1),
    dict(kernel_w=3, stride_w=2, pad_left=1),
    dict(kernel_w=3, stride_w=2, pad_left=1, pad_right=0, pad_top=0, pad_bottom=1),
    dict(kernel_w=4, stride_w=3, pad_left=2, pad_top=1),
]


@pytest.mark.parametrize("pad_mode", [0, 1, 2, 3])
@pytest.mark.parametrize("window", WINDOWS, ids=lambda g: ",".join(f"{k}={v}" for k, v in g.items()))
@pytest.mark.parametrize("pooling_type,count_include_pad", [(0, 0), (1, 0), (1, 1)],
                         ids=["max", "avg", "avg-include-pad"])
def test_pooling(tmp_path, rng, pooling_type, window, pad_mode, count_include_pad):
    params = ids("Pooling", pooling_type=pooling_type, pad_mode=pad_mode,
                 avgpool_count_include_pad=count_include_pad, **window)
    x = rng.standard_normal((3, 10, 9)).astype(np.float32)
    check(tmp_path, "Pooling", params, [x], rtol=1e-5)


@pytest.mark.parametrize("channels", [3, 16])
@pytest.mark.parametrize("pooling_type", [0, 1], ids=["max", "avg"])
def test_packed_channels(tmp_path, rng, pooling_type, channels):
    params = ids("Pooling", pooling_type=pooling_type, kernel_w=3, stride_w=2, pad_left=1)
    check(tmp_path, "Pooling", params, [rng.standard_normal((channels, 11, 8)).astype(np.float32)], rtol=1e-5)


@pytest.mark.parametrize("channels", [5, 16])
@pytest.mark.parametrize("pooling_type", [0, 1], ids=["max", "avg"])
def test_global(tmp_path, rng, pooling_type, channels):
    params = ids("Pooling", pooling_type=pooling_type, global_pooling=1)
    out = check(tmp_path, "Pooling", params, [rng.standard_normal((channels, 6, 7)).astype(np.float32)], rtol=1e-5)
    assert out["out0"].shape == (channels,)


@pytest.mark.parametrize("out_hw", [(1, 1), (2, 3), (4, 4), (3, -233), (5, 9), (7, 6)], ids=str)
@pytest.mark.parametrize("pooling_type", [0, 1], ids=["max", "avg"])
def test_adaptive(tmp_path, rng, pooling_type, out_hw):
    params = ids("Pooling", pooling_type=pooling_type, adaptive_pooling=1, out_h=out_hw[0], out_w=out_hw[1])
    check(tmp_path, "Pooling", params, [rng.standard_normal((4, 7, 9)).astype(np.float32)], rtol=1e-5)


def test_same_padding_avg_counts_pad_when_param_pads_are_zero(tmp_path):
    """pad_mode 2 with count_include_pad=0: ncnn only excludes the *param* pads, so the SAME
    border zeros still count as area at the edges (a corner of ones averages to 4/9)."""
    params = ids("Pooling", pooling_type=1, kernel_w=3, stride_w=1, pad_mode=2)
    out = check(tmp_path, "Pooling", params, [np.ones((1, 4, 4), np.float32)], rtol=1e-6)["out0"]
    assert out[0, 0, 0] == pytest.approx(4 / 9)
