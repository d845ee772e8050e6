"""Reshape 12=input_batch_axis / 13=output_batch_axis (recent ncnn, written by pnnx), batch 1."""
import numpy as np
import pytest

from converter.interpreter import InterpreterError

from .layer_check import check, interpret

# (input shape, params, output shape): the batch axis is part of the shape ncnn reads
CASES = [
    ((8,), {12: 0, 13: 0, 6: "1,1,//(8,0n),0n"}, (8, 1, 1)),       # pnnx's SE-block reshape
    ((4, 6, 5), {12: 0, 13: 0, 6: "0,0,0,0"}, (4, 6, 5)),            # 0 copies the same outer place
    ((4, 6, 5), {12: 0, 13: 0, 6: "-1,0c,0n"}, (4, 30)),
    ((4, 6, 5), {12: 0, 13: 0, 0: 30, 1: 4, 2: 1}, (4, 30)),         # w/h/c params instead
    ((4, 6, 5), {12: 0, 13: 0, 0: -1, 1: 0, 2: 0}, (4, 30)),         # 0 copies n, then c
    ((4, 6, 5), {12: -1, 13: -1, 6: "0n,-1,0h,0c"}, (4, 6, 5)),      # batch innermost
    ((4, 6, 5), {12: 3, 13: 0, 6: "-1,1"}, (120,)),                   # batch moves outward
    ((4, 6, 5), {13: 0, 6: "5,6,4,1"}, (4, 6, 5)),                    # only the output has one
    ((4, 6, 5), {12: 0, 6: "-1,4"}, (4, 30)),                         # only the input has one
    ((2, 3, 4, 5), {12: 0, 13: 0, 6: "0w,-1,0d,0c,1"}, (2, 3, 4, 5)),
    ((2, 3, 4, 5), {12: 0, 13: 1, 6: "-1,1,2"}, (2, 60)),
]


@pytest.mark.parametrize("shape, params, out_shape", CASES, ids=[str(c[1]) for c in CASES])
def test_batch_axis_reshape_matches_ncnn(tmp_path, rng, shape, params, out_shape):
    x = rng.standard_normal(shape).astype(np.float32)
    out = check(tmp_path, "Reshape", params, [x], exact=True)
    assert out["out0"].shape == out_shape


@pytest.mark.parametrize("params, why", [
    ({12: 0, 13: 0, 6: "-1,2"}, "batch of 2"),
    ({12: 0, 13: 0, 6: "-1,-1"}, "one -1 at most"),
    ({12: 7, 13: 0, 6: "-1,1"}, "input_batch_axis 7 is out of range"),
    ({12: 0, 13: 5, 6: "-1,1"}, "output_batch_axis 5 is out of range"),
    ({12: 0, 13: 0, 6: "7,-1,1"}, "cannot hold"),
])
def test_batch_axis_reshape_errors(params, why):
    with pytest.raises(InterpreterError, match=why):
        interpret("Reshape", params, [np.zeros((4, 6, 5), np.float32)])
