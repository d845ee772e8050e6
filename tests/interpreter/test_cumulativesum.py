"""CumulativeSum against the real ncnn."""
import numpy as np
import pytest

from .layer_check import check, ids

CASES = [((7,), 0), ((7,), 3), ((4, 5), 0), ((4, 5), 1), ((4, 5), -1), ((3, 4, 5), 0), ((3, 4, 5), 1),
         ((3, 4, 5), 2), ((3, 4, 5), -2), ((2, 3, 4, 5), 0), ((2, 3, 4, 5), 1), ((2, 3, 4, 5), 2),
         ((2, 3, 4, 5), 3), ((2, 3, 4, 5), -1)]


@pytest.mark.parametrize("shape,axis", CASES, ids=str)
def test_cumulative_sum(tmp_path, rng, shape, axis):
    x = rng.uniform(-3, 3, shape).astype(np.float32)
    check(tmp_path, "CumulativeSum", ids("CumulativeSum", axis=axis), [x], rtol=1e-6, atol=1e-6)


def test_running_sum_of_ones_counts_exactly(tmp_path):
    """The anchor-grid rewrite counts 1, 2, ... n with it: exact in float32."""
    check(tmp_path, "CumulativeSum", {}, [np.ones(5000, np.float32)], exact=True)
