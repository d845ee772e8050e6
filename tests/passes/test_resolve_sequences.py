"""resolve_sequences: sequences whose items are known when converting become those tensors (SplitToSequence
a Split, SequenceAt an Identity, ConcatFromSequence a Concat), in real ncnn and the interpreter against
onnxruntime; a sequence read at a run-time position keeps its nodes and is refused by name."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from converter import convert
from converter.ir import ConversionError
from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model


def model_of(nodes, outputs, inits=(), inputs=(("x", (1, 6, 4)),)):
    return make_model(nodes, list(inputs), outputs, list(inits), opset=17)


@pytest.mark.parametrize("split,keepdims,at,want", [
    ([1, 2, 3], 1, -1, (1, 3, 4)),        # given sizes: the last piece
    (None, 0, 2, (1, 4)),                 # pieces of 1, squeezed
    (4, 1, 1, (1, 2, 4)),                 # a scalar size: 4 then the rest
])
def test_split_to_sequence_read_at_constant_positions(split, keepdims, at, want, tmp_path):
    inits = [("at", np.array(at, np.int64))]
    inputs = ["x"]
    if split is not None:
        inits.append(("split", np.array(split, np.int64)))
        inputs.append("split")
    nodes = [helper.make_node("SplitToSequence", inputs, ["seq"], axis=1, keepdims=keepdims),
             helper.make_node("SequenceAt", ["seq", "at"], ["y"])]
    model = model_of(nodes, [("y", want)], inits)
    converted = check_in_ncnn(model, tmp_path)
    check_interpreter_matches_ncnn(converted, model, tmp_path)
    assert converted.stats["sequence_items_read"] == 1


def test_construct_insert_erase_and_concat(tmp_path):
    """[x, relu(x)] with -x inserted at 1, the last erased, stacked on a new axis: [x, -x]."""
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Neg", ["x"], ["n"]),
             helper.make_node("SequenceConstruct", ["x", "r"], ["s0"]),
             helper.make_node("SequenceInsert", ["s0", "n", "one"], ["s1"]),
             helper.make_node("SequenceErase", ["s1"], ["s2"]),
             helper.make_node("ConcatFromSequence", ["s2"], ["y"], axis=1, new_axis=1)]
    model = model_of(nodes, [("y", (1, 2, 6, 4))], [("one", np.array(1, np.int64))])
    converted = check_in_ncnn(model, tmp_path)
    check_interpreter_matches_ncnn(converted, model, tmp_path)
    assert not [n for n in converted.graph.topological() if "Sequence" in n.op]


def test_a_run_time_position_is_refused_by_name():
    nodes = [helper.make_node("SplitToSequence", ["x"], ["seq"], axis=1, keepdims=1),
             helper.make_node("SequenceAt", ["seq", "at"], ["y"], name="pick")]
    model = model_of(nodes, [("y", None)], inputs=[("x", (1, 6, 4)), ("at", (), TensorProto.INT64)])
    with pytest.raises(ConversionError, match=r"SequenceAt \('pick'\)"):
        convert(model)
