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


def test_batch_above_one_is_left_as_cells():
    """ncnn's recurrent layers run one sequence; the cells run any batch as they are."""
    model = onnx.load(UNROLLED / "gru_given_state.onnx")
    converted = convert(model, input_shapes={"x": [STEPS, 2, 7], "h": [2, 5]})
    assert converted.stats["recurrent_cells_fused"] == 0
