"""Softplus, AbsVal, BNLL, Threshold, Exp, Log, Power and DeepCopy against the real ncnn."""
import numpy as np
import pytest

from .layer_check import check, ids

SHAPES = [(7,), (3, 5), (4, 3, 6), (2, 3, 4, 5)]


def wide_values(rng, shape):
    """Normal values plus the edges: zeros, large magnitudes (overflow of exp), tiny ones."""
    x = rng.standard_normal(shape).astype(np.float32) * 3
    flat = x.reshape(-1)
    edges = np.array([0.0, -0.0, 90.0, -90.0, 30.0, -30.0, 1e-30], np.float32)[:flat.size]
    flat[:edges.size] = edges
    return x


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("op", ["Softplus", "AbsVal", "BNLL", "DeepCopy"])
def test_parameterless(tmp_path, rng, op, shape):
    check(tmp_path, op, {}, [wide_values(rng, shape)])


@pytest.mark.parametrize("value", [0.0, 0.5, -1.25])
@pytest.mark.parametrize("shape", SHAPES[1:3])
def test_threshold(tmp_path, rng, value, shape):
    x = rng.standard_normal(shape).astype(np.float32)
    x.reshape(-1)[0] = value               # exactly at the threshold gives 0
    check(tmp_path, "Threshold", ids("Threshold", threshold=value), [x], exact=True)


AFFINE = [dict(), dict(scale=0.5), dict(shift=1.5), dict(scale=-2.0, shift=0.25)]


@pytest.mark.parametrize("affine", AFFINE, ids=str)
@pytest.mark.parametrize("base", [-1.0, 2.0, 10.0, 0.5])
def test_exp(tmp_path, rng, base, affine):
    x = rng.uniform(-4, 4, (3, 4, 5)).astype(np.float32)
    check(tmp_path, "Exp", ids("Exp", base=base, **affine), [x])


@pytest.mark.parametrize("affine", AFFINE, ids=str)
@pytest.mark.parametrize("base", [-1.0, 2.0, 10.0])
def test_log(tmp_path, rng, base, affine):
    """Arguments at or below zero give -inf and NaN on both sides."""
    x = rng.uniform(-1, 5, (3, 4, 5)).astype(np.float32)
    check(tmp_path, "Log", ids("Log", base=base, **affine), [x])


@pytest.mark.parametrize("affine", AFFINE, ids=str)
@pytest.mark.parametrize("exponent", [1.0, 2.0, 3.0, 0.5, -1.0, 0.0, 2.5])
def test_power(tmp_path, rng, exponent, affine):
    x = rng.uniform(-3, 3, (2, 5, 6)).astype(np.float32)
    check(tmp_path, "Power", ids("Power", power=exponent, **affine), [x])
