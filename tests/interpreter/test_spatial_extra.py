"""InstanceNorm, PixelShuffle and Reorg kernels against the real ncnn."""
import numpy as np
import pytest

from .layer_check import check


@pytest.mark.parametrize("affine", [0, 1])
@pytest.mark.parametrize("shape", [(4, 5, 6), (3, 2, 4, 5)])
def test_instancenorm(tmp_path, rng, affine, shape):
    c = shape[0]
    weights = [rng.uniform(0.5, 2, c), rng.standard_normal(c)] if affine else []
    check(tmp_path, "InstanceNorm", {0: c, 1: 1e-3, 2: affine}, [rng.standard_normal(shape).astype(np.float32) * 3 + 1],
          weights)


@pytest.mark.parametrize("mode", [0, 1])
@pytest.mark.parametrize("r", [2, 3])
def test_pixelshuffle(tmp_path, rng, mode, r):
    check(tmp_path, "PixelShuffle", {0: r, 1: mode}, [rng.standard_normal((2 * r * r, 3, 5)).astype(np.float32)],
          exact=True)


@pytest.mark.parametrize("mode", [0, 1])
@pytest.mark.parametrize("s, hw", [(2, (4, 6)), (3, (6, 9)), (2, (5, 7))])
def test_reorg(tmp_path, rng, mode, s, hw):
    check(tmp_path, "Reorg", {0: s, 1: mode}, [rng.standard_normal((3, *hw)).astype(np.float32)], exact=True)
