"""LSTM, GRU and RNN against the real ncnn: every direction, with and without state blobs."""
import numpy as np
import pytest

from converter.interpreter import InterpreterError

from .layer_check import check, ids, interpret

T, SIZE, HIDDEN = 5, 6, 4
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
STATES = {"LSTM": 2, "GRU": 1, "RNN": 1}
# initial states fed / final states extracted
STATE_USE = [("none", False, False), ("in", True, False), ("out", False, True), ("in_out", True, True)]


def recurrent_case(rng, op, direction, num_output=HIDDEN, hidden=HIDDEN):
    dirs = 2 if direction == 2 else 1
    gates = GATES[op]
    weight_xc = rng.standard_normal(dirs * gates * hidden * SIZE) * 0.5
    bias_rows = 4 if op != "RNN" else 1
    weights = [weight_xc, rng.standard_normal(dirs * bias_rows * hidden) * 0.5,
               rng.standard_normal(dirs * gates * hidden * num_output) * 0.5]
    params = {"num_output": num_output, "weight_data_size": weight_xc.size, "direction": direction}
    if op == "LSTM" and hidden != num_output:
        params["hidden_size"] = hidden
        weights.append(rng.standard_normal(dirs * hidden * num_output) * 0.5)
    return ids(op, **params), weights


@pytest.mark.parametrize("state_use", STATE_USE, ids=lambda s: s[0])
@pytest.mark.parametrize("direction", [0, 1, 2])
@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
def test_recurrent_layer(tmp_path, rng, op, direction, state_use):
    _, feed_states, read_states = state_use
    params, weights = recurrent_case(rng, op, direction)
    dirs = 2 if direction == 2 else 1
    inputs = [rng.standard_normal((T, SIZE)).astype(np.float32)]
    if feed_states:
        inputs += [rng.standard_normal((dirs, HIDDEN)).astype(np.float32) for _ in range(STATES[op])]
    n_outputs = 1 + STATES[op] if read_states else 1
    check(tmp_path, op, params, inputs, weights, n_outputs=n_outputs)


@pytest.mark.parametrize("direction", [0, 2])
def test_lstm_projection(tmp_path, rng, direction):
    """hidden_size != num_output: ncnn projects h through weight_hr (not in ONNX, but a valid file)."""
    params, weights = recurrent_case(rng, "LSTM", direction, num_output=3, hidden=HIDDEN)
    dirs = 2 if direction == 2 else 1
    x = rng.standard_normal((T, SIZE)).astype(np.float32)
    states = [rng.standard_normal((dirs, 3)), rng.standard_normal((dirs, HIDDEN))]
    check(tmp_path, "LSTM", params, [x, *states], weights, n_outputs=3)


def test_one_direction_state_may_be_flat(tmp_path, rng):
    """A one-direction layer reads its state by data pointer: a 1-D state works, and comes back 1-D."""
    params, weights = recurrent_case(rng, "GRU", 0)
    x = rng.standard_normal((T, SIZE)).astype(np.float32)
    check(tmp_path, "GRU", params, [x, rng.standard_normal(HIDDEN)], weights, n_outputs=2)


def test_wrong_sequence_width_is_refused(rng):
    params, weights = recurrent_case(rng, "RNN", 0)
    with pytest.raises(InterpreterError, match="2-D sequence"):
        interpret("RNN", params, [np.zeros((T, SIZE + 1), np.float32)], weights)


def test_bidirectional_state_needs_two_rows(rng):
    params, weights = recurrent_case(rng, "GRU", 2)
    x = np.zeros((T, SIZE), np.float32)
    with pytest.raises(InterpreterError, match="2 row"):
        interpret("GRU", params, [x, np.zeros(2 * HIDDEN, np.float32)], weights, n_outputs=2)
