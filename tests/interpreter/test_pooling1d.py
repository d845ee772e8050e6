"""Pooling1D against the real ncnn."""
import numpy as np
import pytest

from converter.interpreter import InterpreterError

from .layer_check import check, ids, interpret

MAX, AVG = 0, 1
GEOMETRY = [
    dict(kernel_w=2, stride_w=2),
    dict(kernel_w=3, stride_w=1),
    dict(kernel_w=3, stride_w=2, pad_left=1),
    dict(kernel_w=4, stride_w=3, pad_left=1, pad_right=2),
    dict(kernel_w=3, stride_w=2, pad_mode=1),
    dict(kernel_w=4, stride_w=3, pad_left=1, pad_mode=1),
    dict(kernel_w=3, stride_w=2, pad_mode=2),
    dict(kernel_w=4, stride_w=2, pad_mode=3),
    dict(kernel_w=5, stride_w=3, pad_left=2, pad_mode=0),
]
label = lambda g: ",".join(f"{k}={v}" for k, v in g.items())  # noqa: E731


@pytest.mark.parametrize("geometry", GEOMETRY, ids=label)
@pytest.mark.parametrize("pooling_type,include_pad", [(MAX, 0), (AVG, 0), (AVG, 1)])
def test_pooling1d_windows(tmp_path, rng, geometry, pooling_type, include_pad):
    params = ids("Pooling1D", pooling_type=pooling_type, avgpool_count_include_pad=include_pad, **geometry)
    check(tmp_path, "Pooling1D", params, [rng.standard_normal((3, 14)).astype(np.float32)])


@pytest.mark.parametrize("pooling_type", [MAX, AVG])
@pytest.mark.parametrize("shape", [(4, 17), (23,)])
def test_pooling1d_global(tmp_path, rng, pooling_type, shape):
    params = ids("Pooling1D", pooling_type=pooling_type, global_pooling=1)
    check(tmp_path, "Pooling1D", params, [rng.standard_normal(shape).astype(np.float32)])


@pytest.mark.parametrize("pooling_type", [MAX, AVG])
@pytest.mark.parametrize("length,out_w", [(17, 5), (12, 4), (7, 7), (5, 8), (13, 1)])
def test_pooling1d_adaptive(tmp_path, rng, pooling_type, length, out_w):
    params = ids("Pooling1D", pooling_type=pooling_type, adaptive_pooling=1, out_w=out_w)
    check(tmp_path, "Pooling1D", params, [rng.standard_normal((3, length)).astype(np.float32)])


def test_pooling1d_on_a_1d_blob(tmp_path, rng):
    params = ids("Pooling1D", pooling_type=AVG, kernel_w=3, stride_w=2, pad_left=1)
    check(tmp_path, "Pooling1D", params, [rng.standard_normal(15).astype(np.float32)])


@pytest.mark.parametrize("params,match", [
    (dict(adaptive_pooling=1, out_w=-233), "needs out_w > 0"),       # ncnn refuses to load it
    (dict(kernel_w=3, pad_left=-1), "negative pad"),                  # ncnn crops the input instead
])
def test_pooling1d_refusals(params, match):
    with pytest.raises(InterpreterError, match=match):
        interpret("Pooling1D", ids("Pooling1D", **params), [np.zeros((2, 9), np.float32)])
