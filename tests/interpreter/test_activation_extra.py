"""Mish, CELU and Shrink against the real ncnn."""
import numpy as np
import pytest

from .layer_check import check, ids

SHAPES = [(37,), (5, 7), (16, 3, 5), (3, 2, 4, 5)]
LAYERS = [("Mish", {}), ("CELU", {}), ("CELU", {"alpha": 0.4}), ("CELU", {"alpha": 2.5}),
          ("Shrink", {}), ("Shrink", {"bias": 0.3, "lambd": 1.2}), ("Shrink", {"bias": 2.0, "lambd": 0.0})]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("op,named", LAYERS, ids=lambda v: v if isinstance(v, str) else ",".join(map(str, v.values())))
def test_layer(tmp_path, rng, op, named, shape):
    x = rng.uniform(-5, 5, shape).astype(np.float32)
    check(tmp_path, op, ids(op, **named), [x], rtol=1e-5)


def test_mish_past_its_thresholds(tmp_path):
    x = np.array([-100, -30, -20.5, -19.5, -1, 0, 1, 19.5, 20.5, 30, 100, 1000], np.float32)
    check(tmp_path, "Mish", {}, [x], rtol=1e-5, atol=1e-7)


def test_shrink_at_its_knees(tmp_path):
    x = np.array([-1.5, -0.5, -0.25, 0, 0.25, 0.5, 1.5], np.float32)
    check(tmp_path, "Shrink", ids("Shrink", bias=0.1, lambd=0.5), [x], exact=True)
