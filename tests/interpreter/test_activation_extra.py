"""Softplus, Mish, CELU and Shrink kernels against the real ncnn, across their thresholds."""
import numpy as np
import pytest

from .layer_check import check


@pytest.mark.parametrize("op, params", [("Softplus", {}), ("Mish", {}), ("CELU", {0: 0.5}), ("CELU", {}),
                                        ("Shrink", {0: 0.2, 1: 1.0}), ("Shrink", {})])
@pytest.mark.parametrize("shape", [(5, 4, 9), (7, 3), (40,)])
def test_kernel_matches_ncnn(tmp_path, rng, op, params, shape):
    x = rng.uniform(-30, 30, shape).astype(np.float32)
    check(tmp_path, op, params, [x])
