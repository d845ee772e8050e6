"""PixelShuffle and Reorg against the real ncnn: both modes, factors, and ncnn's flooring."""
import numpy as np
import pytest

from .layer_check import check, ids


def arange(shape):
    return np.arange(np.prod(shape), dtype=np.float32).reshape(shape)


@pytest.mark.parametrize("mode", [0, 1])
@pytest.mark.parametrize("shape,r", [((8, 3, 5), 2), ((18, 2, 3), 3), ((16, 4, 4), 2), ((4, 3, 3), 1),
                                     ((10, 3, 2), 2), ((32, 3, 5), 4)], ids=str)
def test_pixelshuffle(tmp_path, shape, r, mode):
    check(tmp_path, "PixelShuffle", ids("PixelShuffle", upscale_factor=r, mode=mode), [arange(shape)], exact=True)


@pytest.mark.parametrize("mode", [0, 1])
@pytest.mark.parametrize("shape,s", [((3, 4, 6), 2), ((2, 6, 9), 3), ((8, 4, 4), 2), ((3, 5, 7), 2),
                                     ((4, 3, 3), 1), ((16, 8, 4), 4)], ids=str)
def test_reorg(tmp_path, shape, s, mode):
    check(tmp_path, "Reorg", ids("Reorg", stride=s, mode=mode), [arange(shape)], exact=True)
