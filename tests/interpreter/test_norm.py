"""BatchNorm, LayerNorm, Softmax and Reduction against the real ncnn."""
import itertools

import numpy as np
import pytest

from converter.interpreter import InterpreterError
from converter.ncnn_side.runtime import NcnnError

from .layer_check import check, ids, interpret, one_layer_graph, run_real

SHAPES = [(12,), (6, 5), (16, 3, 5), (4, 2, 3, 5)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_batchnorm(tmp_path, rng, shape):
    c = shape[0]
    weights = [rng.standard_normal(c), rng.standard_normal(c), rng.uniform(0.1, 2, c), rng.standard_normal(c)]
    params = ids("BatchNorm", channels=c, eps=1e-5)
    check(tmp_path, "BatchNorm", params, [rng.standard_normal(shape).astype(np.float32)], weights)


def layernorm_cases():
    """(shape, affine_size, affine): affine_size picks how many trailing axes ncnn normalizes."""
    yield (10,), 10, 1
    yield (6, 10), 10, 1
    yield (4, 6, 10), 10, 1          # per row
    yield (4, 6, 10), 60, 1          # per channel
    yield (16, 6, 10), 60, 0
    yield (3, 4, 6, 5), 5, 1         # per row
    yield (3, 4, 6, 5), 30, 1        # per (c, d) slice
    yield (3, 4, 6, 5), 120, 1       # per channel
    yield (3, 4, 6, 5), 7, 0         # no affine: anything else normalizes a whole channel


@pytest.mark.parametrize("shape,affine_size,affine", list(layernorm_cases()), ids=str)
def test_layernorm(tmp_path, rng, shape, affine_size, affine):
    weights = [rng.standard_normal(affine_size), rng.standard_normal(affine_size)] if affine else []
    params = ids("LayerNorm", affine_size=affine_size, eps=1e-5, affine=affine)
    x = (rng.standard_normal(shape) * 3 + 1).astype(np.float32)
    check(tmp_path, "LayerNorm", params, [x], weights)


def test_layernorm_affine_size_mismatch_raises(rng):
    params = ids("LayerNorm", affine_size=7, affine=1)
    with pytest.raises(InterpreterError, match="affine_size 7"):
        interpret("LayerNorm", params, [np.zeros((4, 6, 10), np.float32)], [np.ones(7), np.zeros(7)])


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_softmax_every_axis(tmp_path, rng, shape):
    for axis in list(range(len(shape))) + [-1]:
        params = ids("Softmax", axis=axis, fixbug0=1)
        check(tmp_path, "Softmax", params, [3 * rng.standard_normal(shape).astype(np.float32)], rtol=1e-5)


def test_softmax_axis_without_fixbug0_is_refused(tmp_path, rng):
    """Current ncnn refuses to load an old-style Softmax with axis != 0; so does the interpreter."""
    x = rng.standard_normal((3, 4)).astype(np.float32)
    graph, feeds = one_layer_graph("Softmax", ids("Softmax", axis=1), [x])
    with pytest.raises(NcnnError, match="could not load"):
        run_real(tmp_path, graph, feeds)
    with pytest.raises(InterpreterError, match="fixbug0"):
        interpret("Softmax", ids("Softmax", axis=1), [x])


def test_softmax_axis0_without_fixbug0(tmp_path, rng):
    check(tmp_path, "Softmax", {}, [rng.standard_normal((4, 3, 5)).astype(np.float32)], rtol=1e-5)


def axis_subsets(ndim):
    return [s for k in range(1, ndim + 1) for s in itertools.combinations(range(ndim), k)]


# operation -> input range (logs need positive sums)
OPERATIONS = {0: (-2, 2), 1: (-2, 2), 2: (-2, 2), 3: (-2, 2), 4: (-2, 2), 5: (-2, 2), 6: (0.5, 1.5),
              7: (-2, 2), 8: (-2, 2), 9: (0.1, 2), 10: (-2, 2)}


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("shape", [(7,), (4, 5), (3, 4, 5), (2, 3, 4, 5)], ids=str)
def test_reduction_axes(tmp_path, rng, operation, keepdims, shape):
    x = rng.uniform(*OPERATIONS[operation], shape).astype(np.float32)
    for axes in axis_subsets(len(shape)):
        params = ids("Reduction", operation=operation, reduce_all=0, axes=list(axes), keepdims=keepdims,
                     fixbug0=1, coeff=1.5)
        check(tmp_path, "Reduction", params, [x], rtol=1e-5)


@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_reduction_reduce_all(tmp_path, rng, shape, keepdims):
    params = ids("Reduction", operation=3, reduce_all=1, keepdims=keepdims)
    out = check(tmp_path, "Reduction", params, [rng.standard_normal(shape).astype(np.float32)], rtol=1e-5)
    assert out["out0"].shape == ((1,) * len(shape) if keepdims else (1,))


def test_reduction_negative_axes(tmp_path, rng):
    params = ids("Reduction", operation=0, reduce_all=0, axes=[-1, -3], fixbug0=1)
    check(tmp_path, "Reduction", params, [rng.standard_normal((2, 3, 4, 5)).astype(np.float32)], rtol=1e-5)


def test_reduction_axes_without_fixbug0_is_refused(tmp_path, rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    params = ids("Reduction", operation=0, reduce_all=0, axes=[1])
    graph, feeds = one_layer_graph("Reduction", params, [x])
    with pytest.raises(NcnnError, match="could not load"):
        run_real(tmp_path, graph, feeds)
    with pytest.raises(InterpreterError, match="fixbug0"):
        interpret("Reduction", params, [x])
