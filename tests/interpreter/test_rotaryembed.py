"""RotaryEmbed: the interpreter against the real ncnn runtime, both pairings, one and many heads."""
from __future__ import annotations

import numpy as np
import pytest

from .layer_check import check


@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("shape", [(4, 5, 16), (1, 1, 8), (3, 7, 64)])
def test_rotaryembed_matches_ncnn(tmp_path, interleaved, shape):
    rng = np.random.default_rng(sum(shape) + interleaved)
    x = rng.standard_normal(shape).astype(np.float32)
    angles = rng.uniform(-3, 3, (shape[1], shape[2] // 2)).astype(np.float32)
    check(tmp_path, "RotaryEmbed", {0: interleaved}, [x, np.cos(angles), np.sin(angles)])


def test_rotaryembed_rotates_the_halves():
    """Independent of ncnn: the half-split rotation of (1, 0 | 0, 1) by 90 degrees."""
    from .layer_check import interpret
    x = np.array([[[1.0, 0.0, 0.0, 1.0]]], np.float32)
    cos, sin = np.zeros((1, 2), np.float32), np.ones((1, 2), np.float32)
    out = interpret("RotaryEmbed", {0: 0}, [x, cos, sin])["out0"]
    np.testing.assert_allclose(out, [[[0.0, -1.0, 1.0, 0.0]]], atol=1e-7)
