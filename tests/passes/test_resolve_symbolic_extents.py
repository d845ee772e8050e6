"""resolve_symbolic_extents: run-time sizes followed as terms. Hugging Face's mask gather (the
flattened mask at arange(S), a (1, 1, 1, S, 1) tensor) and torch's expand to its own shape vanish,
a dynamic batch's unknown extents become 1, and one converted file matches onnxruntime at several
lengths (real ncnn and the interpreter); the term arithmetic itself is checked on its own."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from converter.shapes.symbolic import Ref, op
from converter.shapes.term_arithmetic import broadcast, evaluate, quotient
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


def repeat_kv(cut="none"):
    """Llama's grouped-query repeat_kv after an RMS norm: k (1, G, S, D) -> (1, G, 1, S, D) -> Expand to
    Concat(1, G, 2, S, D) with S read by Shape -> (1, 2G, S, D). The rotary half is a constant Slice of the
    last axis (cut="half"), or of the run-time axis from its start (cut="tail")."""
    nodes = [_node("ReduceMean", ["x", "last"], "ms", keepdims=1), _node("Div", ["x", "ms"], "k"),
             _node("Unsqueeze", ["k", "axis2"], "k5"), _node("Shape", ["x"], "shape"),
             _node("Gather", ["shape", "two"], "s", axis=0), _node("Unsqueeze", ["s", "axis0"], "s1"),
             _node("Concat", ["lead", "s1", "dim"], "target", axis=0), _node("Expand", ["k5", "target"], "wide"),
             _node("Concat", ["lead2", "s1", "dim"], "merged", axis=0), _node("Reshape", ["wide", "merged"], "y0")]
    if cut == "half":
        nodes.append(_node("Slice", ["y0", "zero", "half", "minus_one"], "y"))
    elif cut == "tail":
        nodes.append(_node("Slice", ["y0", "one", "big", "axis2"], "y"))
    else:
        nodes[-1].output[0] = "y"
    inits = [("last", np.array([-1])), ("axis2", np.array([2])), ("axis0", np.array([0])), ("two", np.array(2)),
             ("lead", np.array([1, 2, 2])), ("dim", np.array([4])), ("lead2", np.array([1, 4])),
             ("zero", np.array([0])), ("one", np.array([1])), ("half", np.array([2])), ("minus_one", np.array([-1])),
             ("big", np.array([2**62]))]
    inits = [(n, np.asarray(v, np.int64)) for n, v in inits[:-1]] + [inits[-1]]
    return make_model(nodes, [("x", [1, 2, "S", 4])], [("y", None)], inits, opset=18)    # ReduceMean's axes input


@pytest.mark.parametrize("cut", ["none", "half", "tail"])
def test_an_expand_that_repeats_known_axes_keeps_the_run_time_one(tmp_path, cut):
    """x * ones(1, 2, 2, S, 4) is Expand(x, [1, 1, 2, 1, 4]): one Tile, no filled tensor, and the 5-D
    tensor merges (the terms follow S through ReduceMean with its axes as an input and the Slices)."""
    converted = assert_one_file_many_sizes(repeat_kv(cut=cut), tmp_path, [(3,), (8,)], dims=("S",))
    types = [n.op for n in converted.graph.topological()]
    assert "Tile" in types and not {"Interp", "MemoryData"} & set(types), types


def test_an_expand_of_a_run_time_extent_to_another_stays_a_product(tmp_path):
    """(1, 1, S) to (1, T, S), T from another input: repeats that depend on T stay x * ones(1, T, S), filled
    at run time."""
    nodes = [_node("Shape", ["t"], "ts"), _node("Gather", ["ts", "one"], "n", axis=0),
             _node("Unsqueeze", ["n", "axis0"], "n1"), _node("Shape", ["x"], "xs"),
             _node("Gather", ["xs", "two"], "s", axis=0), _node("Unsqueeze", ["s", "axis0"], "s1"),
             _node("Concat", ["axis0_one", "n1", "s1"], "target", axis=0), _node("Expand", ["x", "target"], "y")]
    inits = [(n, np.array(v, np.int64)) for n, v in (("one", 1), ("two", 2), ("axis0", [0]), ("axis0_one", [1]))]
    model = make_model(nodes, [("x", [1, 1, "S"]), ("t", [1, "T"])], [("y", None)], inits)
    converted = assert_one_file_many_sizes(model, tmp_path, [(3, 2), (5, 4)], dims=("S", "T"))
    assert "Interp" in [n.op for n in converted.graph.topological()]
