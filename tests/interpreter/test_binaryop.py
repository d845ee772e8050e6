"""BinaryOp and Eltwise: the interpreter against the real ncnn, including ncnn's own broadcasting."""
import numpy as np
import pytest

from converter.interpreter import InterpreterError

from .layer_check import Const, check, interpret, one_layer_graph, run_real

POW_OPS = {6, 9}                          # pow, rpow: keep the base positive


def operands(rng, op_type, *shapes):
    """Values away from 0 (divisors) and positive for pow's base."""
    out = []
    for shape in shapes:
        mag = rng.uniform(0.5, 2.0, shape)
        out.append((mag if op_type in POW_OPS else mag * rng.choice([-1.0, 1.0], shape)).astype(np.float32))
    return out


@pytest.mark.parametrize("op_type", range(19))
def test_every_op_type(tmp_path, rng, op_type):
    a, b = operands(rng, op_type, (3, 4, 5), (3, 4, 5))
    check(tmp_path, "BinaryOp", {0: op_type}, [a, b], rtol=1e-5)


@pytest.mark.parametrize("op_type", range(19))
def test_with_scalar(tmp_path, rng, op_type):
    (a,) = operands(rng, op_type, (2, 3, 17))
    b = 1.75 if op_type in POW_OPS else -1.25
    check(tmp_path, "BinaryOp", {0: op_type, 1: 1, 2: b}, [a], rtol=1e-5)


EQUAL_RANK = [
    ((5,), (1,)), ((1,), (5,)), ((7,), (7,)),
    ((1, 5), (3, 1)), ((3, 1), (1, 5)), ((8, 5), (8, 1)), ((8, 5), (1, 5)), ((1, 1), (4, 6)),
    ((4, 3, 5), (4, 1, 5)), ((4, 3, 2), (1, 3, 1)), ((4, 1, 5), (1, 3, 1)), ((1, 3, 5), (16, 1, 1)),
    ((16, 3, 5), (1, 3, 5)), ((16, 1, 5), (1, 3, 1)), ((8, 3, 1), (1, 1, 5)), ((16, 4, 4), (16, 1, 1)),
    ((5, 4, 3, 2), (5, 1, 3, 2)), ((5, 4, 3, 2), (1, 4, 1, 1)), ((1, 4, 1, 2), (8, 1, 3, 1)),
    ((16, 2, 3, 4), (16, 2, 1, 1)), ((2, 3, 4, 5), (1, 1, 1, 1)),
]


@pytest.mark.parametrize("const", [False, True], ids=["input", "memorydata"])
@pytest.mark.parametrize("sa,sb", EQUAL_RANK, ids=lambda s: "x".join(map(str, s)))
def test_equal_rank_broadcast(tmp_path, rng, sa, sb, const):
    a, b = operands(rng, 1, sa, sb)
    out = check(tmp_path, "BinaryOp", {0: 1}, [a, Const(b) if const else b], rtol=1e-6, atol=1e-6)["out0"]
    np.testing.assert_array_equal(out, a - b)      # at equal rank ncnn is numpy


def per_outer(b, ndim):
    """b spread along the outermost axis (ncnn's per-row / per-channel reading)."""
    return b.reshape(b.shape + (1,) * (ndim - b.ndim))


# lower-rank operand, and the numpy-order shape ncnn gives it
MISMATCHED_RANK = [
    ((4, 3, 5), (4,), "per-channel"),        # numpy: error
    ((4, 3, 4), (4,), "per-channel"),        # numpy: along w, silently different
    ((3, 3), (3,), "per-row"),               # numpy: along w
    ((2, 3), (2,), "per-row"),               # numpy: error
    ((3, 4, 1), (3, 4), "outer"),            # numpy: (3,4,4)
    ((3, 4, 2, 5), (3, 4), "outer"),         # numpy: error
    ((2, 3, 4, 5), (2, 3, 4), "outer"),      # numpy: error
    ((5, 2, 3, 5), (5,), "per-channel"),     # numpy: along w
    ((16, 3, 5), (16,), "per-channel"),      # packed channels
    ((1, 1, 1), (2, 3), "outer"),            # numpy: (1,2,3); ncnn: (2,3,1)
]


@pytest.mark.parametrize("swap", [False, True], ids=["big-first", "small-first"])
@pytest.mark.parametrize("sa,sb,how", MISMATCHED_RANK, ids=lambda s: "x".join(map(str, s)) if isinstance(s, tuple) else s)
def test_rank_mismatch_where_ncnn_is_not_numpy(tmp_path, rng, sa, sb, how, swap):
    a, b = operands(rng, 1, sa, sb)
    inputs = [b, a] if swap else [a, b]
    out = check(tmp_path, "BinaryOp", {0: 1}, inputs, rtol=1e-6, atol=1e-6)["out0"]
    b_ncnn = per_outer(b, a.ndim)
    expected = (b_ncnn - a) if swap else (a - b_ncnn)
    np.testing.assert_array_equal(out, expected)
    try:
        numpy_result = (b - a) if swap else (a - b)
    except ValueError:
        return                                       # numpy cannot even broadcast these
    assert numpy_result.shape != out.shape or not np.allclose(numpy_result, out)


# lower-rank operand that ncnn runs along w, as numpy does
AGREES_WITH_NUMPY = [((2, 3), (3,)), ((4, 3, 5), (5,)), ((2, 3, 4, 5), (5,)), ((4, 3, 5), (1,)),
                     ((1,), (2, 3, 4)), ((1, 1, 1), (5,))]


@pytest.mark.parametrize("sa,sb", AGREES_WITH_NUMPY, ids=lambda s: "x".join(map(str, s)))
def test_rank_mismatch_along_w(tmp_path, rng, sa, sb):
    a, b = operands(rng, 3, sa, sb)
    out = check(tmp_path, "BinaryOp", {0: 3}, [a, b], rtol=1e-6, atol=1e-6)["out0"]
    np.testing.assert_allclose(out, a / b, rtol=1e-6)


INCOMPATIBLE = [((4, 3, 5), (3, 5)), ((4, 3, 5), (2, 1, 1)), ((3, 5), (4,)), ((4, 3, 5), (6,)),
                ((1, 3, 4), (3, 4)), ((2, 3), (3, 2)), ((5,), (3,)), ((2, 3, 4, 5), (3, 4, 5))]


@pytest.mark.parametrize("sa,sb", INCOMPATIBLE, ids=lambda s: "x".join(map(str, s)))
def test_incompatible_shapes_raise(rng, sa, sb):
    a, b = operands(rng, 0, sa, sb)
    with pytest.raises(InterpreterError, match=r"BinaryOp layer 'layer'.*do not broadcast") as err:
        interpret("BinaryOp", {0: 0}, [a, b])
    for shape in (sa, sb):
        assert "(" + ",".join(map(str, shape)) + ")" in str(err.value)


def test_ncnn_clamps_rows_where_the_interpreter_raises(tmp_path, rng):
    """(1,3,4) - (3,4): ncnn aligns (3,4) as (3,4,1), makes a (3,4,4) output and repeats
    row 2 of the first operand for row 3: garbage, which the interpreter refuses to emulate."""
    a, b = operands(rng, 1, (1, 3, 4), (3, 4))
    graph, feeds = one_layer_graph("BinaryOp", {0: 1}, [a, b])
    real = run_real(tmp_path, graph, feeds)["out0"]
    rows = np.minimum(np.arange(4), 2)
    np.testing.assert_array_equal(real, a[0][rows][None] - b[:, :, None])
    with pytest.raises(InterpreterError):
        interpret("BinaryOp", {0: 1}, [a, b])


@pytest.mark.parametrize("op_type,coeffs", [(0, []), (1, []), (1, [0.5, -2.0, 1.5]), (2, [])])
@pytest.mark.parametrize("shape", [(7,), (3, 5), (4, 3, 5), (2, 3, 4, 5)], ids=str)
def test_eltwise(tmp_path, rng, op_type, coeffs, shape):
    xs = [rng.standard_normal(shape).astype(np.float32) for _ in range(3)]
    params = {0: op_type, **({1: coeffs} if coeffs else {})}
    check(tmp_path, "Eltwise", params, xs, rtol=1e-6, atol=1e-6)


def test_eltwise_shape_mismatch_raises(rng):
    with pytest.raises(InterpreterError, match="equal shapes"):
        interpret("Eltwise", {0: 1}, [np.zeros((2, 3)), np.zeros((3, 2))])
