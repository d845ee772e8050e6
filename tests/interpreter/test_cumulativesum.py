"""CumulativeSum against the real ncnn: every rank, every axis (negative too).

The pip runtime runs CumulativeSum_x86 (SIMD, absent from the reference sources), which
adds in blocks rather than strictly left to right: its sums differ from sequential float32
by a few ulps, so these compare with the default tolerance, not bit for bit.
"""
import numpy as np
import pytest

from converter.interpreter import InterpreterError
from converter.ncnn_side.runtime import NcnnError

from .layer_check import check, ids, interpret

SHAPES = [(7,), (4, 5), (3, 4, 5), (2, 3, 4, 5)]
CASES = [(shape, axis) for shape in SHAPES for axis in range(-len(shape), len(shape))]


@pytest.mark.parametrize("shape,axis", CASES, ids=str)
def test_cumulative_sum(tmp_path, rng, shape, axis):
    x = rng.uniform(-3, 3, shape).astype(np.float32)
    check(tmp_path, "CumulativeSum", ids("CumulativeSum", axis=axis), [x])


def test_one_dim_ignores_axis(tmp_path, rng):
    x = rng.uniform(-3, 3, (9,)).astype(np.float32)
    check(tmp_path, "CumulativeSum", ids("CumulativeSum", axis=3), [x])


def test_axis_out_of_range_is_refused(tmp_path, rng):
    x = rng.uniform(-3, 3, (3, 4)).astype(np.float32)
    with pytest.raises(NcnnError):
        check(tmp_path, "CumulativeSum", ids("CumulativeSum", axis=2), [x])
    with pytest.raises(InterpreterError, match="axis 2 is out of range"):
        interpret("CumulativeSum", ids("CumulativeSum", axis=2), [x])


def test_running_sum_of_ones_counts_exactly(tmp_path):
    """The anchor-grid rewrite (converter/shapes/runtime_fill.py) counts 1, 2, ... n with it: exact in float32."""
    check(tmp_path, "CumulativeSum", {}, [np.ones(5000, np.float32)], exact=True)
