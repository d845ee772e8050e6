"""Pooling3D against the real ncnn."""
import pytest

from .layer_check import check, ids

MAX, AVG = 0, 1
GEOMETRY = [
    dict(kernel_w=2, stride_w=2),
    dict(kernel_w=3, stride_w=1),
    dict(kernel_w=3, kernel_d=2, stride_w=2, stride_d=1, pad_left=1, pad_front=0),
    dict(kernel_w=3, stride_w=2, pad_left=1, pad_right=0, pad_top=0, pad_bottom=1, pad_front=1, pad_behind=0),
    dict(kernel_w=3, stride_w=2, pad_mode=1),
    dict(kernel_w=2, stride_w=3, pad_left=1, pad_mode=1),
    dict(kernel_w=3, stride_w=2, pad_mode=2),
    dict(kernel_w=2, stride_w=2, pad_mode=3),      # d's odd pixel goes last (see conv3d.py)
    dict(kernel_w=4, stride_w=3, pad_mode=3),
]
label = lambda g: ",".join(f"{k}={v}" for k, v in g.items())  # noqa: E731


@pytest.mark.parametrize("geometry", GEOMETRY, ids=label)
@pytest.mark.parametrize("pooling_type,include_pad", [(MAX, 0), (AVG, 0), (AVG, 1)])
def test_pooling3d_windows(tmp_path, rng, geometry, pooling_type, include_pad):
    params = ids("Pooling3D", pooling_type=pooling_type, avgpool_count_include_pad=include_pad, **geometry)
    check(tmp_path, "Pooling3D", params, [rng.standard_normal((2, 5, 6, 7))])


@pytest.mark.parametrize("pooling_type", [MAX, AVG])
def test_pooling3d_global(tmp_path, rng, pooling_type):
    params = ids("Pooling3D", pooling_type=pooling_type, global_pooling=1)
    check(tmp_path, "Pooling3D", params, [rng.standard_normal((3, 4, 5, 6))])


@pytest.mark.parametrize("pooling_type", [MAX, AVG])
@pytest.mark.parametrize("out", [(2, 3, 4), (1, 1, 1), (5, 7, 3), (-233, 2, -233), (4, 6, 8)])
def test_pooling3d_adaptive(tmp_path, rng, pooling_type, out):
    params = ids("Pooling3D", pooling_type=pooling_type, adaptive_pooling=1, out_d=out[0], out_h=out[1], out_w=out[2])
    check(tmp_path, "Pooling3D", params, [rng.standard_normal((2, 5, 6, 7))])
