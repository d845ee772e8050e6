"""LRN against the real ncnn: across channels and within a channel, odd and even sizes."""
import numpy as np
import pytest

from converter.interpreter import InterpreterError

from .layer_check import check, ids, interpret

VARIANTS = [
    dict(region_type=0),
    dict(region_type=0, local_size=3, alpha=0.5, beta=0.6, bias=2.0),
    dict(region_type=0, local_size=4, alpha=1e-4, beta=0.75, bias=1.0),
    dict(region_type=0, local_size=2, alpha=0.5, beta=0.75, bias=1.0),
    dict(region_type=0, local_size=6, alpha=0.7, beta=0.75, bias=1.0),
    dict(region_type=0, local_size=1, alpha=2.0, beta=1.0, bias=0.5),
    dict(region_type=0, local_size=9, alpha=0.3, beta=0.5, bias=1.5),
    dict(region_type=1, local_size=3, alpha=0.5, beta=0.75, bias=1.0),
    dict(region_type=1, local_size=4, alpha=0.2, beta=0.6, bias=2.0),
]


@pytest.mark.parametrize("named", VARIANTS, ids=lambda d: ",".join(f"{k}={v}" for k, v in d.items()))
@pytest.mark.parametrize("shape", [(5, 4, 6), (16, 7, 3), (3, 1, 9)], ids=str)
def test_lrn(tmp_path, rng, named, shape):
    x = rng.standard_normal(shape).astype(np.float32) * 2
    check(tmp_path, "LRN", ids("LRN", **named), [x])


def test_lrn_even_size_reaches_one_channel_less_forward(tmp_path):
    """The runtime sums channels q-2..q+1 for size 4 (lrn.cpp's loop reads q-2..q+2)."""
    x = np.ones((7, 1, 1), np.float32)
    x[3] = 10.0
    out = check(tmp_path, "LRN", ids("LRN", local_size=4, alpha=4.0, beta=1.0, bias=1.0), [x])["out0"]
    others = [0, 1, 2, 4, 5, 6]
    reached = [c for c in others if out.ravel()[c] < 0.02]     # divided by ~1 + 103, not ~1 + 4
    assert reached == [2, 4, 5]


def test_lrn_rejects_4d():
    with pytest.raises(InterpreterError, match="rank 3"):
        interpret("LRN", {}, [np.zeros((2, 3, 4, 5), np.float32)])
