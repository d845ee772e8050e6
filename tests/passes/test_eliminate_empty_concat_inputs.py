"""A Concat of a rotated part and an empty pass-through slice (partial rotary at factor 1): the empty
input and its Slice go, in the real ncnn and the interpreter against onnxruntime."""
import numpy as np
import pytest
from onnx import helper

from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model


def rotary_concat(rotary, width=8, order=("rot", "pass")):
    ints = lambda v: np.array(v, np.int64)     # noqa: E731
    nodes = [helper.make_node("Slice", ["x", "zero", "r", "last"], ["rot_in"]),
             helper.make_node("Neg", ["rot_in"], ["rot"]),
             helper.make_node("Slice", ["x", "r", "w", "last"], ["pass"]),
             helper.make_node("Concat", list(order), ["y"], axis=-1)]
    inits = [("zero", ints([0])), ("r", ints([rotary])), ("w", ints([width])), ("last", ints([-1]))]
    return make_model(nodes, [("x", [1, 4, 6, width])], [("y", None)], inits)


@pytest.mark.parametrize("rotary, order", [(8, ("rot", "pass")), (8, ("pass", "rot")), (4, ("rot", "pass"))])
def test_empty_concat_input_is_dropped(tmp_path, rotary, order):
    model = rotary_concat(rotary, order=order)
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["empty_concat_inputs"] == (rotary == 8)
    check_interpreter_matches_ncnn(converted, model, tmp_path)
