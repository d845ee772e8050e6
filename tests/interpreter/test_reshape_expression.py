"""Reshape 6=shape_expr: the interpreter computes the shapes the real ncnn computes."""
import numpy as np
import pytest

from converter.ncnn_side.expression import Expr, count_blobs, evaluate, expression_list
from converter.interpreter import InterpreterError

from .layer_check import check, interpret

# (data shape, reference blob shape, expression): each evaluates to a valid reshape of the data
CASES = [
    ((2, 6, 4), (3, 5), "0w,*(0h,0c)"),                       # [4, 12]
    ((2, 6, 4), (3, 5), "-1,*(0h,2)"),                         # infer w
    ((2, 6, 4), (3, 5), "//(0w,2),*(0h,2),0,0c"),               # 4-D with a copied d
    ((3, 8, 10), (7, 5), "*(0w,0h),-1"),
    ((4, 6, 5), (2, 4), "0w,0h,1w"),                           # reads the second blob: c = 4
    ((12, 5), (9,), "5,//(1w,3),-1"),                          # 1w = 9 -> h = 3
    ((3, 4, 6), (8, 2), "+(-(1w,2),0),/(12,2.5),-1"),          # float term truncated: 4.8 -> 4
    ((2, 3, 4, 5), (1,), "0w,0h,*(0d,0c)"),
    ((6, 4), (3,), "*(max(1w,2),min(0h,2)),-1"),
    ((6, 4), (5,), "floor(/(1w,2)),-1"),                       # 2
    ((6, 4), (5,), "ceil(/(1w,2)),-1"),                        # 3
    ((6, 4), (5,), "round(/(1w,2)),-1"),                       # 2.5 rounds away from zero: 3
    ((2, 6), (3,), "trunc(3.0),-1"),                           # a float literal equal to an int is an int
    ((8, 3), (5,), "-1,square(2)"),
]


@pytest.mark.parametrize("data_shape, ref_shape, expr", CASES)
def test_reshape_expression_matches_ncnn(tmp_path, rng, data_shape, ref_shape, expr):
    x = rng.standard_normal(data_shape).astype(np.float32)
    ref = rng.standard_normal(ref_shape).astype(np.float32)
    inputs = [x, ref] if count_blobs(expr) > 1 else [x]   # ncnn wants exactly the blobs it reads
    check(tmp_path, "Reshape", {6: expr}, inputs, exact=True)


def test_single_input_expression(tmp_path, rng):
    x = rng.standard_normal((4, 6, 5)).astype(np.float32)
    out = check(tmp_path, "Reshape", {6: "*(0w,0h),0c"}, [x], exact=True)
    assert out["out0"].shape == (4, 30)


def test_builder_writes_what_it_means():
    w, h = Expr.ref(0, "w"), Expr.ref(1, "h")
    terms = [-1, (w * 2 + 1) // 3, h.call("max", 1), Expr.const(2) * 3]
    text = expression_list(terms)
    assert text == "-1,//(+(*(0w,2),1),3),max(1h,1),6"
    # numpy order (c, h, w): blob 0 has w = 7, blob 1 has h = 0 -> max(0, 1) = 1
    assert evaluate(text, [(1, 1, 7), (0, 3)]) == [-1, 5, 1, 6]


def test_extra_blob_for_a_one_blob_expression_is_refused_like_ncnn(tmp_path):
    from converter.ncnn_side.runtime import NcnnError
    from .layer_check import one_layer_graph, run_real
    x = np.zeros((2, 3), np.float32)
    graph, feeds = one_layer_graph("Reshape", {6: "0w,0h"}, [x, x])
    with pytest.raises(NcnnError):
        run_real(tmp_path, graph, feeds)
    with pytest.raises(InterpreterError, match="one_blob_only"):
        interpret("Reshape", {6: "0w,0h"}, [x, x])


@pytest.mark.parametrize("expr, why", [
    ("+(0w)", "enough operands"),
    ("0w,1h", "reads blob 1"),
    ("//(0w,0)", "divides by zero"),
    ("0w,bogus", "malformed literal"),
])
def test_bad_expressions_are_clear_errors(expr, why):
    with pytest.raises(InterpreterError, match=why):
        interpret("Reshape", {6: expr}, [np.zeros((2, 3), np.float32)])
