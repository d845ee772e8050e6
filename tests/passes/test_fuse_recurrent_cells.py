"""Unrolled torch LSTMCell / GRUCell / RNNCell loops (models/unrolled/, from
scripts/export_unrolled_cells.py) become one ncnn LSTM / GRU / RNN layer per loop: each weight
stored once, the numbers still onnxruntime's in real ncnn and in the interpreter."""
from pathlib import Path

import numpy as np
import onnx
import pytest

from converter import convert
from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, ncnn_layer_types

UNROLLED = Path(__file__).resolve().parents[2] / "models" / "unrolled"
STEPS = 6


def _weight_floats(model: onnx.ModelProto) -> int:
    return sum(int(np.prod(t.dims)) for t in model.graph.initializer)


@pytest.mark.parametrize("name, layers, directions", [
    ("lstm_bidirectional", ["LSTM", "LSTM"], [0, 1]),      # the backward loop is direction reverse
    ("gru_given_state", ["GRU"], [0]),
    ("rnn_square", ["RNN"], [0]),
])
def test_unrolled_cells_become_one_layer(tmp_path, name, layers, directions):
    model = onnx.load(UNROLLED / f"{name}.onnx")
    converted = check_in_ncnn(model, tmp_path)
    types = ncnn_layer_types(converted)
    assert [t for t in types if t in ("LSTM", "GRU", "RNN")] == layers
    assert not {"InnerProduct", "Gemm", "MatMul"} & set(types)
    assert converted.stats["recurrent_cells_fused"] == STEPS * len(layers)
    recurrent = [n for n in converted.graph.nodes.values() if n.op in layers]
    assert [n.params.get(2, 0) for n in recurrent] == directions
    stored = sum(w.size for n in converted.graph.nodes.values() for w in n.weights)
    assert stored <= _weight_floats(model) + 64      # each weight once (biases summed, tiny states)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_a_gate_read_outside_leaves_its_step_as_a_cell(tmp_path):
    """The first step's input gate is also a model output: that step stays written out, and the
    five after it become one layer starting from its states."""
    model = onnx.load(UNROLLED / "lstm_bidirectional.onnx")
    gate = next(n.output[0] for n in model.graph.node if n.op_type == "Sigmoid")
    model.graph.output.append(onnx.helper.make_value_info(gate, onnx.TypeProto()))
    converted = check_in_ncnn(onnx.shape_inference.infer_shapes(model), tmp_path)
    assert converted.stats["recurrent_cells_fused"] == 2 * STEPS - 1
    assert ncnn_layer_types(converted).count("LSTM") == 2


def _batch_of(model: onnx.ModelProto, batch: int, keep_outputs: int) -> onnx.ModelProto:
    """The export at another batch (its inputs' axis 1, or 0 for a [1, H] state), its first outputs only."""
    for vi in model.graph.input:
        dims = vi.type.tensor_type.shape.dim
        dims[1 if len(dims) == 3 else 0].dim_value = batch
    del model.graph.output[keep_outputs:]
    for vi in model.graph.output:
        vi.type.tensor_type.ClearField("shape")
    return onnx.shape_inference.infer_shapes(model)


def test_a_batch_of_sequences_becomes_one_op_and_its_weights_are_written_once(tmp_path):
    """Batch 2: the loops still become LSTMs (ONNX's batch axis); with the final cell state unread
    the lowering runs each over both sequences with a reset step, weights once."""
    model = _batch_of(onnx.load(UNROLLED / "lstm_bidirectional.onnx"), 2, keep_outputs=2)
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["recurrent_cells_fused"] == 2 * STEPS
    assert ncnn_layer_types(converted).count("LSTM") == 2
    stored = sum(w.size for n in converted.graph.nodes.values() for w in n.weights)
    assert stored <= _weight_floats(model) + 64      # each weight once (flag columns, biases summed)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_a_batch_with_a_given_state_keeps_a_layer_per_sequence(tmp_path):
    """An initial state fed by the caller cannot be reset to between sequences: one GRU per sequence."""
    model = _batch_of(onnx.load(UNROLLED / "gru_given_state.onnx"), 2, keep_outputs=2)
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["recurrent_cells_fused"] == STEPS
    assert ncnn_layer_types(converted).count("GRU") == 2
