"""ONNX LSTM / GRU / RNN converted to ncnn, against onnxruntime and the real ncnn runtime."""
import numpy as np
import pytest
from onnx import helper, numpy_helper

from converter import convert
from converter.ir import ConversionError
from tests.onnx_cases import (assert_matches_reference, check_in_ncnn, check_interpreter_matches_ncnn, make_model,
                              ncnn_layer_types, random_inputs, run_converted_in_ncnn)

T, SIZE, HIDDEN = 7, 5, 4
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
STATES = {"LSTM": ["h0", "c0"], "GRU": ["h0"], "RNN": ["h0"]}
DIRECTIONS = {"forward": 1, "reverse": 1, "bidirectional": 2}


def recurrent_model(op, direction="forward", states="none", read_states=True, layout=0, attrs=None,
                    bias=True, batch=1, after=None):
    """X -> op; `states`: none / input / constant initial states; `after`: 'squeeze' or 'merge'
    (the exporters' Squeeze of the direction axis, or Transpose + Reshape for bidirectional)."""
    rng = np.random.default_rng(len(op) * 7 + len(direction) + len(states))
    dirs, gates = DIRECTIONS[direction], GATES[op]
    inits = [("W", rng.standard_normal((dirs, gates * HIDDEN, SIZE)).astype(np.float32) * 0.6),
             ("R", rng.standard_normal((dirs, gates * HIDDEN, HIDDEN)).astype(np.float32) * 0.6)]
    inputs = [("X", [batch, T, SIZE] if layout else [T, batch, SIZE])]
    node_inputs = ["X", "W", "R", ""]
    if bias:
        inits.append(("B", rng.standard_normal((dirs, 2 * gates * HIDDEN)).astype(np.float32) * 0.5))
        node_inputs[3] = "B"
    state_shape = [batch, dirs, HIDDEN] if layout else [dirs, batch, HIDDEN]
    if states != "none":
        node_inputs.append("")         # sequence_lens
        for name in STATES[op]:
            node_inputs.append(name)
            if states == "input":
                inputs.append((name, state_shape))
            else:
                inits.append((name, rng.standard_normal(state_shape).astype(np.float32)))
    outputs = ["Y"] + ([f"{s}n" for s in ("Y_h", "Y_c")[:len(STATES[op])]] if read_states else [])
    extra = {"linear_before_reset": 1} if op == "GRU" else {}
    if layout:
        extra["layout"] = 1
    nodes = [helper.make_node(op, node_inputs, ["Y_raw" if after else "Y", *outputs[1:]],
                              direction=direction, hidden_size=HIDDEN, **extra, **(attrs or {}))]
    if after == "squeeze":
        inits.append(("axes", np.array([1], np.int64)))
        nodes.append(helper.make_node("Squeeze", ["Y_raw", "axes"], ["Y"]))
    elif after == "merge":
        inits.append(("shape", np.array([T, batch, dirs * HIDDEN], np.int64)))
        nodes += [helper.make_node("Transpose", ["Y_raw"], ["Y_t"], perm=[0, 2, 1, 3]),
                  helper.make_node("Reshape", ["Y_t", "shape"], ["Y"])]
    return make_model(nodes, inputs, [(o, None) for o in outputs], inits, opset=14 if layout else 13)


@pytest.mark.parametrize("states", ["none", "input", "constant"])
@pytest.mark.parametrize("direction", list(DIRECTIONS))
@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
def test_recurrent_matches_onnxruntime(tmp_path, op, direction, states):
    model = recurrent_model(op, direction, states)
    converted = check_in_ncnn(model, tmp_path)
    assert ncnn_layer_types(converted).count(op) == 1
    check_interpreter_matches_ncnn(converted, model, tmp_path)


@pytest.mark.parametrize("op", ["LSTM", "GRU"])
def test_only_the_sequence_read(tmp_path, op):
    """No state is read or fed: the layer has one bottom and one top."""
    model = recurrent_model(op, "bidirectional", read_states=False, bias=False)
    converted = check_in_ncnn(model, tmp_path)
    layer = next(n for n in converted.graph.nodes.values() if n.op == op)
    assert (len(layer.inputs), len(layer.outputs)) == (1, 1)


@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
def test_layout_batch_first(tmp_path, op):
    """onnxruntime refuses layout=1; with batch 1 its tensors hold the same values in the same
    order as layout 0's, so the layout-0 model is the reference."""
    batch_first = recurrent_model(op, "bidirectional", "input", layout=1)
    reference = recurrent_model(op, "bidirectional", "input")
    feeds = random_inputs(reference)
    shapes = {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim] for vi in batch_first.graph.input}
    _, outputs = run_converted_in_ncnn(batch_first, {k: v.reshape(shapes[k]) for k, v in feeds.items()},
                                       tmp_path)
    assert_matches_reference(reference, feeds, outputs)


@pytest.mark.parametrize("after,direction", [("squeeze", "forward"), ("squeeze", "reverse"),
                                             ("merge", "bidirectional")])
def test_exporter_reshapes_after(tmp_path, after, direction):
    model = recurrent_model("LSTM", direction, "input", after=after)
    converted = check_in_ncnn(model, tmp_path)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_lstm_with_only_initial_h(tmp_path):
    """ncnn's LSTM takes h0 and c0 together: a missing c0 becomes zeros."""
    model = recurrent_model("LSTM", "forward", "input")
    node = model.graph.node[0]
    node.input[6] = ""
    del model.graph.input[2]
    check_in_ncnn(model, tmp_path)


def test_zero_peepholes_and_full_sequence_lens_are_accepted(tmp_path):
    model = recurrent_model("LSTM", "forward", "input")
    node = model.graph.node[0]
    node.input[4] = "lens"
    node.input.append("P")
    model.graph.initializer.extend([numpy_helper.from_array(np.array([T], np.int32), "lens"),
                                    numpy_helper.from_array(np.zeros((1, 3 * HIDDEN), np.float32), "P")])
    check_in_ncnn(model, tmp_path)


@pytest.mark.parametrize("states", ["none", "input", "constant"])
@pytest.mark.parametrize("op,direction", [("LSTM", "bidirectional"), ("GRU", "forward"), ("RNN", "reverse")])
def test_batch_of_sequences_runs_one_layer_each(tmp_path, op, direction, states):
    """ncnn's layers take one sequence: a batch of 3 is cropped, run by 3 layers, and stacked, where
    one layer with reset steps would not be exact (an RNN, given states, a read Y_c: LSTM's here);
    a GRU from zero states reading Y and Y_h is that one layer (tests/lowering/test_recurrent_batch.py)."""
    model = recurrent_model(op, direction, states, batch=3)
    converted = check_in_ncnn(model, tmp_path)
    assert ncnn_layer_types(converted).count(op) == (1 if (op, states) == ("GRU", "none") else 3)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def refusals():
    yield "clip", dict(attrs={"clip": 1.0}), "clip"
    yield "activations", dict(attrs={"activations": ["Sigmoid", "Relu", "Tanh"]}), "activations"
    yield "input_forget", dict(attrs={"input_forget": 1}), "input_forget"


@pytest.mark.parametrize("kwargs,message", [(k, m) for _, k, m in refusals()],
                         ids=[name for name, _, _ in refusals()])
def test_unsupported_lstm_is_refused(kwargs, message):
    model = recurrent_model("LSTM", **kwargs)
    with pytest.raises(ConversionError, match=f"LSTM node .*{message}"):
        convert(model)


def test_gru_without_linear_before_reset_is_refused():
    model = recurrent_model("GRU")
    for a in model.graph.node[0].attribute:
        if a.name == "linear_before_reset":
            a.i = 0
    with pytest.raises(ConversionError, match="GRU node .*linear_before_reset=0"):
        convert(model)


def test_short_sequences_are_refused_and_peepholes_unrolled():
    """Peepholes over a static length run unrolled (passes/unroll_peephole_lstm.py, checked against
    onnxruntime in tests/passes/test_unroll_peephole_lstm.py); a sequence_lens shorter than T is refused."""
    for slot, name, value, message in [(7, "P", np.ones((1, 3 * HIDDEN), np.float32), None),
                                       (4, "lens", np.array([T - 2], np.int32), "sequence_lens")]:
        model = recurrent_model("LSTM", "forward", "input")
        node = model.graph.node[0]
        while len(node.input) <= slot:
            node.input.append("")
        node.input[slot] = name
        model.graph.initializer.append(numpy_helper.from_array(value, name))
        if message is None:
            assert convert(model).stats["peephole_lstms_unrolled"] == 1
            continue
        with pytest.raises(ConversionError, match=f"LSTM node .*{message}"):
            convert(model)


def test_weights_fed_as_inputs_name_the_fix():
    model = recurrent_model("RNN")
    weight = model.graph.initializer[0]
    model.graph.input.append(helper.make_tensor_value_info(weight.name, weight.data_type, list(weight.dims)))
    del model.graph.initializer[0]
    with pytest.raises(ConversionError, match="'W' is a graph input; fix its value with --input-value W="):
        convert(model)
