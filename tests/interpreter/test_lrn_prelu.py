"""LRN and PReLU kernels against the real ncnn."""
import numpy as np
import pytest

from .layer_check import check


@pytest.mark.parametrize("shape, num_slope", [((4, 5, 6), 4), ((4, 5, 6), 1), ((6, 9), 6), ((8,), 8)])
def test_prelu_kernel(tmp_path, rng, shape, num_slope):
    x = rng.standard_normal(shape).astype(np.float32)
    check(tmp_path, "PReLU", {0: num_slope}, [x], [rng.uniform(-1, 1, num_slope)])


@pytest.mark.parametrize("local_size", [1, 3, 5])
def test_lrn_kernel(tmp_path, rng, local_size):
    x = rng.standard_normal((6, 4, 5)).astype(np.float32)
    check(tmp_path, "LRN", {1: local_size, 2: 0.3, 3: 0.7, 4: 1.5}, [x])
