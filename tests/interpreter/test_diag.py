"""Diag against the real ncnn."""
import pytest

from converter.interpreter import InterpreterError

from .layer_check import check, ids, interpret


@pytest.mark.parametrize("diagonal", [0, 1, 3, -1, -2])
def test_vector_to_matrix(tmp_path, rng, diagonal):
    check(tmp_path, "Diag", ids("Diag", diagonal=diagonal), [rng.standard_normal(5)], exact=True)


@pytest.mark.parametrize("shape", [(4, 4), (3, 6), (6, 3)])
@pytest.mark.parametrize("diagonal", [0, 1, 2, -1, -2])
def test_matrix_to_vector(tmp_path, rng, shape, diagonal):
    check(tmp_path, "Diag", ids("Diag", diagonal=diagonal), [rng.standard_normal(shape)], exact=True)


@pytest.mark.parametrize("shape,diagonal,match", [((3, 4), 4, "outside input"), ((3, 4), -3, "outside input"),
                                                  ((2, 3, 4), 0, "rank 3 or 4")])
def test_refusals(rng, shape, diagonal, match):
    with pytest.raises(InterpreterError, match=match):
        interpret("Diag", ids("Diag", diagonal=diagonal), [rng.standard_normal(shape)])
