"""An LSTM cell written out as ONNX ops (silero-vad's op18 "ifless" export: Gather of the last
frame and of the state halves, two Gemm, Split into gates, Sigmoid/Tanh/Mul/Add, Unsqueeze back
to a 1-D conv's input, the new state stacked with Concat), in real ncnn and the interpreter
against onnxruntime.

The batch axis comes from the frame (Gather along the time axis keeps it); the state input
[2, batch, H] has none of its own, so every Add/Mul that joins the two paths must keep the
frame's batch axis for the Conv after the cell."""
import numpy as np
import pytest
from onnx import helper

from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model, ncnn_layer_types

C, T, H = 6, 3, 4


def _constant(name, value):
    return (name, np.asarray(value))


def lstm_cell_model(state_batch):
    rng = np.random.default_rng(0)
    weights = [_constant("w_ih", rng.uniform(-0.5, 0.5, (4 * H, C)).astype(np.float32)),
               _constant("b_ih", rng.uniform(-0.5, 0.5, 4 * H).astype(np.float32)),
               _constant("w_hh", rng.uniform(-0.5, 0.5, (4 * H, H)).astype(np.float32)),
               _constant("b_hh", rng.uniform(-0.5, 0.5, 4 * H).astype(np.float32)),
               _constant("w_out", rng.uniform(-0.5, 0.5, (1, H, 1)).astype(np.float32)),
               _constant("last", np.array(-1, np.int64)), _constant("zero", np.array(0, np.int64)),
               _constant("one", np.array(1, np.int64)), _constant("ax0", np.array([0], np.int64)),
               _constant("ax2", np.array([2], np.int64))]
    node = helper.make_node
    nodes = [
        node("Relu", ["x"], ["features"]),
        node("Gather", ["features", "last"], ["frame"], axis=2),          # [1, C]
        node("Gather", ["state", "zero"], ["h"], axis=0),                 # [batch, H]
        node("Gather", ["state", "one"], ["c"], axis=0),
        node("Gemm", ["h", "w_hh", "b_hh"], ["hidden_gates"], transB=1),
        node("Gemm", ["frame", "w_ih", "b_ih"], ["input_gates"], transB=1),
        node("Add", ["hidden_gates", "input_gates"], ["gates"]),
        node("Split", ["gates"], ["gi", "gf", "gg", "go"], axis=1, num_outputs=4),
        node("Sigmoid", ["gi"], ["i"]), node("Sigmoid", ["gf"], ["f"]),
        node("Tanh", ["gg"], ["g"]), node("Sigmoid", ["go"], ["o"]),
        node("Mul", ["f", "c"], ["kept"]), node("Mul", ["i", "g"], ["written"]),
        node("Add", ["kept", "written"], ["c_new"]),
        node("Tanh", ["c_new"], ["c_squashed"]), node("Mul", ["o", "c_squashed"], ["h_new"]),
        node("Unsqueeze", ["h_new", "ax2"], ["h_frames"]),                # [1, H, 1]
        node("Relu", ["h_frames"], ["h_relu"]),
        node("Conv", ["h_relu", "w_out"], ["logit"]),
        node("Sigmoid", ["logit"], ["y"]),
        node("Unsqueeze", ["h_new", "ax0"], ["h_stacked"]),
        node("Unsqueeze", ["c_new", "ax0"], ["c_stacked"]),
        node("Concat", ["h_stacked", "c_stacked"], ["state_new"], axis=0),
    ]
    return make_model(nodes, [("x", ["batch", C, T]), ("state", [2, state_batch, H])],
                      [("y", None), ("state_new", None)], weights, opset=18)


@pytest.mark.parametrize("state_batch", [1, "batch"], ids=["state-fixed", "state-shares-batch"])
def test_gemm_built_lstm_cell_feeds_a_conv(tmp_path, state_batch):
    model = lstm_cell_model(state_batch)
    converted = check_in_ncnn(model, tmp_path)
    layers = ncnn_layer_types(converted)
    assert "Convolution" in layers and "LSTM" not in layers
    check_interpreter_matches_ncnn(converted, model, tmp_path)
