"""Squeeze and ExpandDims against the real ncnn: flags, axes (negative too), every rank."""
import itertools

import numpy as np
import pytest

from converter.interpreter import InterpreterError
from converter.ncnn_side.runtime import NcnnError

from .layer_check import check, ids, interpret

FLAG_NAMES = ("squeeze_w", "squeeze_h", "squeeze_d", "squeeze_c")
UNIT_SHAPES = [(1,), (1, 5), (4, 1), (1, 1), (1, 3, 1), (2, 1, 5), (1, 1, 1), (1, 2, 1, 4), (3, 1, 1, 1),
               (1, 1, 1, 1)]


def flag_sets():
    return [dict.fromkeys(names, 1) for k in (1, 2, 4) for names in itertools.combinations(FLAG_NAMES, k)]


@pytest.mark.parametrize("shape", UNIT_SHAPES, ids=str)
def test_squeeze_flags(tmp_path, rng, shape):
    x = rng.uniform(-3, 3, shape).astype(np.float32)
    for flags in flag_sets():
        check(tmp_path, "Squeeze", ids("Squeeze", **flags), [x], exact=True)


@pytest.mark.parametrize("shape", UNIT_SHAPES + [(3, 4, 5)], ids=str)
def test_squeeze_axes(tmp_path, rng, shape):
    x = rng.uniform(-3, 3, shape).astype(np.float32)
    rank = len(shape)
    axis_lists = [[a] for a in range(-rank, rank)] + [list(range(rank)), [0, -1]]
    for axes in axis_lists:
        # axes win over flags; a non-unit or out-of-range axis is ignored
        check(tmp_path, "Squeeze", ids("Squeeze", axes=axes, squeeze_w=1), [x], exact=True)
    if rank < 4:
        check(tmp_path, "Squeeze", ids("Squeeze", axes=[rank]), [x], exact=True)   # past the rank: ignored


@pytest.mark.parametrize("op", ["Squeeze", "ExpandDims"])
@pytest.mark.parametrize("axis", [4, -5])
def test_axes_outside_four_do_not_load(tmp_path, rng, op, axis):
    x = rng.uniform(-3, 3, (1, 3, 1)).astype(np.float32)
    with pytest.raises(NcnnError, match="could not load"):
        check(tmp_path, op, ids(op, axes=[axis]), [x])
    with pytest.raises(InterpreterError, match="refuses to load an axis outside -4..3"):
        interpret(op, ids(op, axes=[axis]), [x])


EXPANDS = [((6,), [0]), ((6,), [1]), ((6,), [-1]), ((6,), [0, 1]), ((6,), [0, 2]), ((6,), [-1, -2]),
           ((6,), [0, 1, 2]), ((6,), [1, 2, 3]), ((6,), [0, 2, 3]), ((2, 3), [0]), ((2, 3), [1]),
           ((2, 3), [2]), ((2, 3), [-1]), ((2, 3), [-3]), ((2, 3), [0, 1]), ((2, 3), [0, 3]),
           ((2, 3), [1, 3]), ((2, 3), [2, 3]), ((2, 3), [1, 2]), ((2, 3), [0, 2]), ((2, 3, 4), [0]),
           ((2, 3, 4), [1]), ((2, 3, 4), [2]), ((2, 3, 4), [3]), ((2, 3, 4), [-2])]


@pytest.mark.parametrize("shape,axes", EXPANDS, ids=str)
def test_expand_dims(tmp_path, rng, shape, axes):
    x = rng.uniform(-3, 3, shape).astype(np.float32)
    check(tmp_path, "ExpandDims", ids("ExpandDims", axes=axes), [x], exact=True)


@pytest.mark.parametrize("shape,axes", [((6,), [0, 0]), ((2, 3), [1, 1]), ((6,), [0, 1, 2, 3]),
                                        ((2, 3), [3]), ((2, 3), [-4])], ids=str)
def test_expand_dims_bad_axes_are_refused(tmp_path, rng, shape, axes):
    # ncnn then yields a shape of the wrong rank (1-D [0,0] -> (1,1,6)) or leaves the blob unchanged
    x = rng.uniform(-3, 3, shape).astype(np.float32)
    with pytest.raises(InterpreterError, match="ncnn needs distinct axes"):
        interpret("ExpandDims", ids("ExpandDims", axes=axes), [x])
