"""Einsum against the real ncnn: the patterns it loads and computes, and the refusals."""
import numpy as np
import pytest

from converter.interpreter import InterpreterError
from converter.ncnn_side.layers import einsum_equation
from converter.ncnn_side.runtime import NcnnError

from .layer_check import check, interpret

CASES = [
    ("ii", [(4, 4)]),                               # trace
    ("ii->i", [(4, 4)]),                            # diagonal
    ("ij->i", [(3, 5)]),                            # row sums
    ("ij->ij", [(3, 5)]),
    ("ik,kj->ij", [(3, 4), (4, 5)]),                # matrix product
    ("ik,jk->ij", [(3, 4), (5, 4)]),                # a @ b.T
    ("i,j->ij", [(3,), (4,)]),                      # outer product
    ("i,i->i", [(6,), (6,)]),
    ("ijm,imk->ijk", [(2, 3, 4), (2, 4, 5)]),       # batched matmul
    ("ijkm,ijml->ijkl", [(2, 2, 3, 4), (2, 2, 4, 3)]),
    ("ijk->i", [(3, 4, 5)]),
    ("ij,j,jk->ij", [(3, 4), (4,), (4, 2)]),        # three operands
    ("ki,k->i", [(4, 3), (4,)]),
    ("iij->ij", [(3, 3, 2)]),
    ("ix,xj->ij", [(3, 2), (2, 4)]),
]


@pytest.mark.parametrize("equation,shapes", CASES, ids=[c[0] for c in CASES])
def test_einsum(tmp_path, rng, equation, shapes):
    inputs = [rng.uniform(-2, 2, s).astype(np.float32) for s in shapes]
    check(tmp_path, "Einsum", {0: einsum_equation(equation)}, inputs)


# the runtime loads only outputs spelled i, ij, ijk, ijkl, and only letters the inputs name
NOT_LOADED = ["ij", "ij->ia", "ay->i", "ii,", "ij->ji", "ij->j", "ik,kj->ik", "ij->", "iy->i", "ik->ij",
              "ij,,jk->ik"]


@pytest.mark.parametrize("equation", NOT_LOADED)
def test_equations_ncnn_will_not_load(tmp_path, equation):
    inputs = [np.ones((2, 2), np.float32)] * max(1, equation.split("->")[0].count(",") + 1)
    with pytest.raises(NcnnError, match="could not load"):
        check(tmp_path, "Einsum", {0: einsum_equation(equation)}, inputs)
    with pytest.raises(InterpreterError, match="Einsum equation"):
        interpret("Einsum", {0: einsum_equation(equation)}, inputs)


@pytest.mark.parametrize("equation,shapes,message", [
    ("ij->i", [(2, 3, 4)], "names 2 axes"),
    ("ij,ij->ij", [(2, 3), (3, 3)], "has extents"),
    ("ii", [(2, 3)], "square"),
])
def test_mismatched_operands_are_refused(equation, shapes, message):
    with pytest.raises(InterpreterError, match=message):
        interpret("Einsum", {0: einsum_equation(equation)}, [np.ones(s, np.float32) for s in shapes])
