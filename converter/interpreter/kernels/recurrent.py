"""LSTM, GRU and RNN as ncnn computes them (lstm.cpp, gru.cpp, rnn.cpp).

The input is a sequence (T, input_size); the output (T, num_output * directions),
the forward direction's values first in each row. Optional extra bottoms give the
initial states and extra tops return the final ones, one row per direction
(shape (directions, num_output) when ncnn creates them, the initial state's shape
when given). A bidirectional layer runs its reverse pass from the second row.
"""
from __future__ import annotations

import numpy as np

from ..registry import fail, kernel, shape_str

F32 = np.float32


def _sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):        # exp(-x) = inf for x below -88: 1 / inf = 0, as in ncnn
        return F32(1) / (F32(1) + np.exp(-x))


def _directions(p) -> int:
    return 2 if p.direction == 2 else 1


def _sequence(x: np.ndarray, size: int, layer: str) -> np.ndarray:
    if x.ndim != 2 or x.shape[1] != size:
        fail(f"{layer} takes a 2-D sequence (T, {size}), got {shape_str(x)}")
    return x


def _states(given: tuple, count: int, dirs: int, widths: tuple[int, ...], layer: str) -> list[np.ndarray]:
    """The initial states, one (dirs, width) array each: zeros, or the extra bottoms."""
    if not given:
        return [np.zeros((dirs, w), F32) for w in widths]
    if len(given) != count:
        fail(f"{layer} takes the input and {count} initial state blob(s), got {len(given)} extra")
    states = []
    for s, w in zip(given, widths):
        # ncnn reads a bidirectional state by rows; one direction reads the data pointer
        if (dirs == 2 and s.shape[-2:] != (2, w)) or s.size != dirs * w:
            fail(f"{layer} initial state of shape {shape_str(s)} is not {dirs} row(s) of {w}")
        states.append(s.reshape(dirs, w).astype(F32, copy=True))
    return states


def _run(step, x: np.ndarray, direction: int, reverse: bool, state: tuple) -> tuple[np.ndarray, tuple]:
    """Unroll one direction: `step(direction, x_t, *state) -> state`, whose first part is h_t."""
    out = np.empty((x.shape[0], state[0].shape[0]), F32)
    for t in (range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])):
        state = step(direction, x[t], *state)
        out[t] = state[0]
    return out, state


def _recurrent(p, step, x: np.ndarray, states: list[np.ndarray], n_outputs: int, shapes: list):
    dirs = _directions(p)
    outs, finals = [], [s.copy() for s in states]
    for d in range(dirs):
        reverse = d == 1 or p.direction == 1
        y, state = _run(step, x, d, reverse, tuple(s[d] for s in states))
        outs.append(y)
        for final, value in zip(finals, state):
            final[d] = value
    y = np.concatenate(outs, axis=1) if dirs == 2 else outs[0]
    if n_outputs == 1:
        return y
    if n_outputs != 1 + len(states):
        fail(f"{len(states) + 1} or 1 output blobs expected, got {n_outputs}")
    return (y, *(f.reshape(shape) for f, shape in zip(finals, shapes)))


def _forward(p, step, size: int, layer: str, widths: tuple[int, ...], n_outputs: int):
    """The layer's run: the sequence, its initial states (zeros, or the extra bottoms) of `widths`,
    unrolled by `step`; final states shaped as given, or (directions, width)."""
    dirs = _directions(p)

    def forward(x, *given):
        states = _states(given, len(widths), dirs, widths, layer)
        shapes = [s.shape for s in given] or [(dirs, w) for w in widths]
        return _recurrent(p, step, _sequence(x, size, layer), states, n_outputs, shapes)
    return forward


def _blocks(w: np.ndarray, dirs: int, gates: int, rows: int, cols: int) -> np.ndarray:
    """A weight buffer as (dirs, gates, rows, cols)."""
    return w.astype(F32).reshape(dirs, gates, rows, cols)


@kernel("LSTM", prepare=True, outputs=True)
def lstm(p, weights, n_outputs):
    if p.int8_scale_term:
        fail("int8 LSTM is not supported by the interpreter")
    dirs, hidden, num_output = _directions(p), p.hidden_size, p.num_output
    size = p.weight_data_size // dirs // hidden // 4
    wx = _blocks(weights[0], dirs, 4, hidden, size)          # gates I F O G
    bias = weights[1].astype(F32).reshape(dirs, 4, hidden)
    wh = _blocks(weights[2], dirs, 4, hidden, num_output)
    wr = weights[3].astype(F32).reshape(dirs, num_output, hidden) if hidden != num_output else None

    def step(d, x_t, h, c):
        gates = bias[d] + wx[d] @ x_t + wh[d] @ h
        i, f, o = _sigmoid(gates[:3])
        cell = f * c + i * np.tanh(gates[3])
        h_new = o * np.tanh(cell)
        return (h_new if wr is None else wr[d] @ h_new), cell

    return _forward(p, step, size, "LSTM", (num_output, hidden), n_outputs)


@kernel("GRU", prepare=True, outputs=True)
def gru(p, weights, n_outputs):
    if p.int8_scale_term:
        fail("int8 GRU is not supported by the interpreter")
    dirs, n = _directions(p), p.num_output
    size = p.weight_data_size // dirs // n // 3
    wx = _blocks(weights[0], dirs, 3, n, size)               # gates R U N
    bias = weights[1].astype(F32).reshape(dirs, 4, n)         # R U, then N's input and hidden biases
    wh = _blocks(weights[2], dirs, 3, n, n)

    def step(d, x_t, h):
        gx, gh = wx[d] @ x_t, wh[d] @ h
        r, u = _sigmoid(bias[d, :2] + gx[:2] + gh[:2])
        new = np.tanh(bias[d, 2] + r * (bias[d, 3] + gh[2]) + gx[2])
        return ((F32(1) - u) * new + u * h,)

    return _forward(p, step, size, "GRU", (n,), n_outputs)


@kernel("RNN", prepare=True, outputs=True)
def rnn(p, weights, n_outputs):
    if p.int8_scale_term:
        fail("int8 RNN is not supported by the interpreter")
    dirs, n = _directions(p), p.num_output
    size = p.weight_data_size // dirs // n
    wx = weights[0].astype(F32).reshape(dirs, n, size)
    bias = weights[1].astype(F32).reshape(dirs, n)
    wh = weights[2].astype(F32).reshape(dirs, n, n)

    def step(d, x_t, h):
        return (np.tanh(bias[d] + wx[d] @ x_t + wh[d] @ h),)

    return _forward(p, step, size, "RNN", (n,), n_outputs)
