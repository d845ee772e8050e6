"""Broadcasts wider than ncnn's 4 axes: merged where adjacent axes broadcast alike, else a clear error."""
import numpy as np
import pytest
from onnx import helper

from converter import ConversionError, convert
from onnx_cases import assert_matches_reference, make_model, random_inputs, run_converted_in_ncnn


@pytest.mark.parametrize("a, b, b_const", [
    ([1, 2, 3, 4, 5, 6], [6], True),
    ([1, 2, 3, 4, 5, 6], [5, 6], False),
    ([1, 2, 3, 4, 5, 6], [1, 2, 1, 1, 5, 6], True),
    ([1, 2, 3, 4, 5, 6], [2, 3, 1, 1, 1], False),
    ([2, 3, 4, 5, 6], [4, 5, 6], True),
    ([1, 2, 3, 4, 5, 6, 7], [7], False),
])
def test_wide_broadcast_is_merged_and_exact(tmp_path, a, b, b_const):
    out = list(np.broadcast_shapes(tuple(a), tuple(b)))
    nodes = [helper.make_node("Add", ["A", "B"], ["S"]), helper.make_node("Relu", ["S"], ["C"])]
    rng = np.random.default_rng(0)
    inits = [("B", rng.uniform(-1, 1, b).astype(np.float32))] if b_const else []
    inputs = [("A", a)] + ([] if b_const else [("B", b)])
    model = make_model(nodes, inputs, [("C", out)], inits)
    feeds = random_inputs(model)
    converted, outputs = run_converted_in_ncnn(model, feeds, tmp_path)
    assert converted.stats["merged_regions"] == 1
    io = converted.io()
    assert io["inputs"][0]["onnx_shape"] == a and len(io["inputs"][0]["ncnn_shape"]) <= 4
    assert_matches_reference(model, feeds, outputs)


def test_alternating_broadcast_cannot_fit():
    a, b = [1, 2, 3, 4, 5, 6], [2, 1, 4, 1, 6]
    model = make_model([helper.make_node("Mul", ["A", "B"], ["C"])], [("A", a)], [("C", a)],
                       [("B", np.ones(b, np.float32))])
    with pytest.raises(ConversionError, match="at most 4"):
        convert(model)
