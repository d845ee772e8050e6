"""Tile and Flip against the real ncnn."""
import numpy as np
import pytest

from .layer_check import check, ids

TILES = [
    ((7,), [3]), ((4, 5), [2, 3]), ((4, 5), [3, 1]), ((3, 4, 5), [2, 1, 3]), ((3, 4, 5), [1, 1, 2]),
    ((2, 3, 4, 5), [2, 2, 1, 3]), ((2, 3, 4, 5), [1, 3, 2, 1]),
    ((7,), [2, 3]), ((4, 5), [2, 1, 3]), ((3, 4, 5), [2]),         # repeats rank differs from the blob's
]


@pytest.mark.parametrize("shape,repeats", TILES, ids=str)
def test_tile_repeats(tmp_path, rng, shape, repeats):
    x = rng.uniform(-3, 3, shape).astype(np.float32)
    check(tmp_path, "Tile", ids("Tile", repeats=repeats), [x], exact=True)


@pytest.mark.parametrize("shape,axis", [((7,), 0), ((4, 5), 0), ((4, 5), 1), ((3, 4, 5), 1), ((2, 3, 4, 5), 3)],
                         ids=str)
def test_tile_axis(tmp_path, rng, shape, axis):
    x = rng.uniform(-3, 3, shape).astype(np.float32)
    check(tmp_path, "Tile", ids("Tile", axis=axis, tiles=3), [x], exact=True)


FLIPS = [((7,), [0]), ((4, 5), [0]), ((4, 5), [1]), ((4, 5), [0, 1]), ((3, 4, 5), [0]), ((3, 4, 5), [2]),
         ((3, 4, 5), [-1, 0]), ((2, 3, 4, 5), [1]), ((2, 3, 4, 5), [0, 2, 3]), ((3, 4, 5), [])]


@pytest.mark.parametrize("shape,axes", FLIPS, ids=str)
def test_flip(tmp_path, rng, shape, axes):
    x = rng.uniform(-3, 3, shape).astype(np.float32)
    check(tmp_path, "Flip", ids("Flip", axes=axes), [x], exact=True)
