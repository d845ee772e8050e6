"""PReLU against the real ncnn: one slope or one per outer index, every blob rank."""
import numpy as np
import pytest

from converter.interpreter import InterpreterError

from .layer_check import check, ids, interpret


@pytest.mark.parametrize("per_index", [False, True])
@pytest.mark.parametrize("shape", [(7,), (5, 6), (4, 3, 5), (16, 3, 4), (3, 2, 4, 5)], ids=str)
def test_prelu(tmp_path, rng, shape, per_index):
    n = shape[0] if per_index else 1
    slope = rng.uniform(-1, 2, n).astype(np.float32)
    x = rng.standard_normal(shape).astype(np.float32)
    check(tmp_path, "PReLU", ids("PReLU", num_slope=n), [x], [slope], exact=True)


def test_prelu_rejects_slope_count_mismatch():
    with pytest.raises(InterpreterError, match="3 slopes"):
        interpret("PReLU", ids("PReLU", num_slope=3), [np.zeros((4, 2, 2), np.float32)],
                  [np.ones(3, np.float32)])
