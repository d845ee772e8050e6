"""Embed and RMSNorm against the real ncnn."""
import numpy as np
import pytest

from converter.interpreter import InterpreterError

from .layer_check import check, ids, interpret


def int_bits(values) -> np.ndarray:
    """Word indices as ncnn's Embed reads them: int32 bits in a float32 blob."""
    return np.asarray(values, np.int32).view(np.float32)


@pytest.mark.parametrize("words, input_dim, num_output, bias", [
    ([0, 3, 1, 1, 4], 5, 8, 0), ([2], 3, 16, 1), ([7, -3, 99, 0], 10, 4, 1),   # out of range: clamped
])
def test_embed(tmp_path, rng, words, input_dim, num_output, bias):
    table = rng.standard_normal((input_dim, num_output))
    weights = [table] + ([rng.standard_normal(num_output)] if bias else [])
    params = ids("Embed", num_output=num_output, input_dim=input_dim, bias_term=bias,
                 weight_data_size=table.size)
    check(tmp_path, "Embed", params, [int_bits(words)], weights, exact=True)


def test_embed_refuses_a_2d_blob(rng):
    params = ids("Embed", num_output=2, input_dim=3, weight_data_size=6)
    with pytest.raises(InterpreterError, match="1-D"):
        interpret("Embed", params, [int_bits([[0, 1], [1, 2]])], [rng.standard_normal(6)])


@pytest.mark.parametrize("shape, affine_size, affine", [
    ((10,), 10, 1), ((6, 10), 10, 1), ((4, 6, 10), 10, 1), ((4, 6, 10), 60, 1), ((4, 6, 10), 60, 0),
    ((3, 4, 6, 5), 5, 1), ((3, 4, 6, 5), 30, 1), ((3, 4, 6, 5), 120, 1),
])
def test_rmsnorm(tmp_path, rng, shape, affine_size, affine):
    weights = [rng.standard_normal(affine_size)] if affine else []
    params = ids("RMSNorm", affine_size=affine_size, eps=1e-5, affine=affine)
    check(tmp_path, "RMSNorm", params, [(rng.standard_normal(shape) * 3 + 1).astype(np.float32)], weights)
