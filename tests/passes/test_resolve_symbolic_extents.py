"""resolve_symbolic_extents: run-time sizes followed as terms. Hugging Face's mask gather (the
flattened mask at arange(S), a (1, 1, 1, S, 1) tensor) and torch's expand to its own shape vanish,
a dynamic batch's unknown extents become 1, and one converted file matches onnxruntime at several
lengths (real ncnn and the interpreter); the term arithmetic itself is checked on its own."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from converter.symbolic import Ref, op
from converter.symbolic_shapes import broadcast, evaluate, quotient
from onnx_cases import assert_one_file_many_sizes, make_model

SEQ = Ref("x", 1)


def _node(op, inputs, output, **attrs):
    return helper.make_node(op, inputs, [output], **attrs)


def mask_gather():
    """masking_utils' padding mask: mask.flatten()[batch * S + arange(S)], reshaped back."""
    nodes = [_node("Flatten", ["m"], "flat", axis=2),
             _node("Shape", ["m"], "shape"), _node("Gather", ["shape", "one"], "s", axis=0),
             _node("Range", ["zero", "s", "one"], "kv"), _node("Unsqueeze", ["kv", "axes3"], "idx"),
             _node("Gather", ["flat", "idx"], "picked", axis=0), _node("Reshape", ["picked", "flat_shape"], "row"),
             _node("Reshape", ["row", "mask_shape"], "mask4"), _node("Mul", ["mask4", "two"], "y")]
    inits = [("zero", np.array(0, np.int64)), ("one", np.array(1, np.int64)), ("axes3", np.array([0, 1, 2])),
             ("flat_shape", np.array([-1])), ("mask_shape", np.array([1, 1, 1, -1])), ("two", np.float32(2))]
    return make_model(nodes, [("m", [1, "S"])], [("y", None)], inits)


def torch_expand():
    """torch's expand(B, S) of ids already (B, S): the target is Where(shape == -1, 1, shape)."""
    nodes = [_node("Shape", ["ids"], "shape"), _node("Equal", ["shape", "minus_one"], "is_free"),
             _node("Where", ["is_free", "ones", "shape"], "target"), _node("Expand", ["ids", "target"], "wide"),
             _node("Gather", ["table", "wide"], "y", axis=0)]
    inits = [("minus_one", np.array([-1], np.int64)), ("ones", np.array([1, 1], np.int64)),
             ("table", np.random.default_rng(3).standard_normal((5, 4)).astype(np.float32))]
    return make_model(nodes, [("ids", ["B", "S"], TensorProto.INT64)], [("y", None)], inits)


def test_a_mask_gathered_at_its_own_positions_is_the_mask(tmp_path):
    converted = assert_one_file_many_sizes(mask_gather(), tmp_path, [(3,), (9,)], dims=("S",))
    assert converted.stats["identity_gathers_removed"] == 1


def test_an_expand_to_its_own_shape_is_dropped(tmp_path):
    converted = assert_one_file_many_sizes(torch_expand(), tmp_path, [(1, 3), (1, 7)], dims=("B", "S"))
    assert converted.stats["identity_reshapes_removed"] == 1
    assert converted.io()["outputs"][0]["batch_axis"] == 0        # the batch's extent is known to be 1


@pytest.mark.parametrize("total, known, want", [
    ([1, SEQ, 32], [1, SEQ, 2], 16),            # the -1 of Reshape(x (1, S, 32), [1, S, 2, -1])
    ([SEQ, 32], [16], op("*", 2, SEQ)),
    ([SEQ, 32], [Ref("y", 0)], None),           # a symbol that does not cancel
    ([SEQ, 30], [SEQ, 4], None),                # numbers that do not divide
])
def test_quotient_cancels_symbols_and_divides_numbers(total, known, want):
    assert quotient(total, known) == want


def test_broadcast_keeps_numbers_and_leaves_open_what_a_symbol_could_be():
    assert broadcast([(1, SEQ, 32), (2, 1, 32)]) == (2, SEQ, 32)
    assert broadcast([(SEQ, 4), (Ref("y", 0), 4)]) == (None, 4)      # either could be 1
    assert broadcast([(SEQ,), (5,)]) == (5,)                          # a symbol against 5 is 1 or 5


def test_evaluate_terms_at_sizes():
    assert evaluate(SEQ, {SEQ: 7}) == 7
    assert evaluate(quotient([SEQ, 32], [16]), {SEQ: 3}) == 6
    assert evaluate(SEQ, {}) is None
