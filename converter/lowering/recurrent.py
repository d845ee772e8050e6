"""ONNX LSTM, GRU and RNN -> ncnn LSTM, GRU and RNN layers.

ncnn runs one sequence (batch 1) given as a 2-D blob (T, input_size) and writes
(T, directions * hidden), each direction's hidden state side by side: the same
memory as ONNX's Y [T, dirs, 1, H] without the batch axis, so Y is one Reshape
away. Initial states are extra bottoms and final states extra tops, one row per
direction: ONNX's Y_h / Y_c [dirs, 1, H] without the batch axis. A batch of B > 1
sequences runs as one sequence with a reset step between them where that is exact, else as
one layer per sequence (lowering/recurrent_batch.py).

Weights are re-ordered per direction: ONNX stacks the LSTM gates i o f c and
ncnn I F O G; GRU z r h and ncnn R U N. ncnn's GRU computes the candidate as
tanh(W_n x + b_Wn + r * (R_n h + b_Rn)): ONNX's linear_before_reset=1 only.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node, Tensor
from . import lowers
from .common import constant, fail, layer, optional_constant, reshape_layer
from .recurrent_batch import BatchRun, batch_in_time, per_sequence

DIRECTIONS = {"forward": 0, "reverse": 1, "bidirectional": 2}
DEFAULT_ACTIVATIONS = {"LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"], "RNN": ["Tanh"]}
# ncnn's gate order as indexes into ONNX's stacked gates
GATE_ORDER = {"LSTM": [0, 2, 1, 3], "GRU": [1, 0, 2], "RNN": [0]}
# the optional ONNX inputs after X, W, R, B, sequence_lens: the initial states
STATE_INPUTS = {"LSTM": (5, 6), "GRU": (5,), "RNN": (5,)}


def _check_supported(graph: Graph, node: Node, dirs: int, seq_len: int | None) -> None:
    """Refuse what ncnn's layers do not compute: clip, other activations, peepholes, ragged lengths."""
    activations = node.attrs.get("activations")
    if activations is not None:
        wanted = DEFAULT_ACTIVATIONS[node.op] * dirs
        if [a.decode() if isinstance(a, bytes) else a for a in activations] != wanted:
            raise fail(node, graph, f"activations {list(activations)} differ from ncnn's fixed {wanted}")
    if node.attrs.get("clip") is not None:
        raise fail(node, graph, "clip is not supported by ncnn's recurrent layers")
    if node.op == "LSTM" and node.attrs["input_forget"]:      # GRU and RNN have no input_forget
        raise fail(node, graph, "input_forget=1 (coupled input and forget gates) is not supported by ncnn")
    if node.op == "GRU" and not node.attrs["linear_before_reset"]:
        raise fail(node, graph, "linear_before_reset=0: ncnn's GRU applies the reset gate after the "
                                "recurrent product (linear_before_reset=1) only")
    peepholes = optional_constant(graph, node, 7, "peepholes P") if node.op == "LSTM" else None
    if peepholes is not None and np.any(peepholes):
        raise fail(node, graph, "peephole weights (input P) are not supported by ncnn's LSTM; over a sequence "
                                "length known when converting (fix it with --input-shape) it runs unrolled "
                                "(passes/unroll_peephole_lstm.py: default activations, no clip)")
    lengths = optional_constant(graph, node, 4, "sequence_lens")
    if lengths is not None and (seq_len is None or np.any(lengths != seq_len)):
        raise fail(node, graph, f"sequence_lens {lengths.tolist()} differ from the sequence length "
                                f"{seq_len}: ncnn runs the whole sequence")


def _reorder(w: np.ndarray, op: str, dirs: int, hidden: int) -> np.ndarray:
    """(dirs, gates * hidden, ...) in ONNX gate order -> flat, in ncnn gate order."""
    order = GATE_ORDER[op]
    return w.reshape(dirs, len(order), hidden, -1)[:, order].ravel()


def _biases(op: str, b: np.ndarray, dirs: int, hidden: int) -> np.ndarray:
    """ONNX B = [Wb, Rb] per direction -> ncnn's bias_c."""
    gates = len(GATE_ORDER[op])
    wb, rb = (b.reshape(dirs, 2, gates, hidden)[:, k] for k in (0, 1))
    if op == "GRU":     # R U (summed), then the candidate's input and recurrent biases apart
        order = GATE_ORDER[op]
        summed = (wb + rb)[:, order[:2]]
        return np.concatenate([summed, wb[:, 2:], rb[:, 2:]], axis=1).ravel()
    return (wb + rb)[:, GATE_ORDER[op]].ravel()


def _sequence_input(graph: Graph, node: Node, size: int, batch_axis_at: int) -> tuple[list[Node], str, int | None]:
    """X as ncnn's 2-D (T, input_size) blob: the nodes making it, its name, and T."""
    x = graph.tensors[node.inputs[0]]
    if x.shape is None or len(x.shape) != 3:
        raise fail(node, graph, "the input X must be a 3-D tensor of known rank")
    if x.shape[batch_axis_at] != 1:
        raise fail(node, graph, f"batch {x.shape[batch_axis_at]}: ncnn runs one sequence at a time "
                                "(batch 1); fix the batch with --input-shape")
    seq_len = x.shape[1 - batch_axis_at]
    if x.batch_axis == batch_axis_at:      # already (T, input_size) in ncnn
        return [], x.name, seq_len
    flat = graph.fresh_name(f"{x.name}_sequence")
    graph.add_tensor(Tensor(flat, (seq_len, size), x.dtype))
    return [reshape_layer(graph, node, x.name, flat, {}, suffix="_sequence")], flat, seq_len


def _state_input(graph: Graph, node: Node, slot: int, dirs: int, hidden: int) -> tuple[list[Node], str | None]:
    """An initial state as ncnn's (dirs, hidden) blob; a constant is reshaped in place."""
    if slot >= len(node.inputs) or not node.inputs[slot]:
        return [], None
    name = node.inputs[slot]
    t = graph.tensors[name]
    if t.is_constant:
        return [], graph.add_constant(f"{name}_rows", np.asarray(t.value, np.float32).reshape(dirs, hidden)).name
    if t.ncnn_shape == (dirs, hidden):
        return [], name
    rows = graph.fresh_name(f"{name}_rows")
    graph.add_tensor(Tensor(rows, (dirs, hidden), t.dtype))
    return [reshape_layer(graph, node, name, rows, {}, suffix=f"_state{slot}")], rows


def _states(graph: Graph, node: Node, dirs: int, hidden: int) -> tuple[list[Node], list[str]]:
    """The state bottoms: none, or all of them (ncnn's LSTM takes h0 and c0 together)."""
    made, names = [], []
    for slot in STATE_INPUTS[node.op]:
        nodes, name = _state_input(graph, node, slot, dirs, hidden)
        made += nodes
        names.append(name)
    if all(n is None for n in names):
        return made, []
    zeros = np.zeros((dirs, hidden), np.float32)
    return made, [n if n is not None else graph.add_constant(f"{node.name}_zero_state", zeros).name
                  for n in names]


def _state_outputs(graph: Graph, node: Node, dirs: int, hidden: int) -> list[str]:
    """The state tops: none unless a final state is read; an unread one gets a scratch blob."""
    wanted = [o if o and graph.use_count(o) else "" for o in node.outputs[1:1 + len(STATE_INPUTS[node.op])]]
    if not any(wanted):
        return []
    outs = []
    for o in wanted + [""] * (len(STATE_INPUTS[node.op]) - len(wanted)):
        if not o:
            o = graph.fresh_name(f"{node.name}_unused_state")
            graph.add_tensor(Tensor(o, (dirs, hidden)))
        elif not _fits(graph.tensors[o].ncnn_shape, (dirs, hidden)):
            raise fail(node, graph, f"final state '{o}' has shape {graph.tensors[o].shape}; "
                                    f"expected [{dirs}, 1, {hidden}] with batch 1")
        outs.append(o)
    return outs


def _fits(shape, wanted: tuple) -> bool:
    return shape is not None and len(shape) == len(wanted) and all(
        d is None or w is None or d == w for d, w in zip(shape, wanted))


@lowers("LSTM", "GRU", "RNN")
def recurrent(graph: Graph, node: Node) -> list[Node]:
    w = constant(graph, node, 1, "the input weights W")
    r = constant(graph, node, 2, "the recurrent weights R")
    dirs, hidden, size = w.shape[0], r.shape[-1], w.shape[-1]
    direction = node.attrs["direction"]
    direction = direction.decode() if isinstance(direction, bytes) else direction
    if direction not in DIRECTIONS or dirs != (2 if direction == "bidirectional" else 1):
        raise fail(node, graph, f"direction {direction!r} with weights for {dirs} direction(s)")
    # .get: layout exists from opset 14; X is [T, B, I], or [B, T, I] with layout=1
    batch_at = 1 - node.attrs.get("layout", 0)
    x = graph.tensors[node.inputs[0]]
    if x.shape is None or len(x.shape) != 3:
        raise fail(node, graph, "the input X must be a 3-D tensor of known rank")
    batch, seq_len = x.shape[batch_at], x.shape[1 - batch_at]
    if batch is None:
        raise fail(node, graph, "the batch extent is unknown; fix it with --input-shape")
    _check_supported(graph, node, dirs, seq_len)
    gates = len(GATE_ORDER[node.op])
    b = optional_constant(graph, node, 3, "the biases B")
    b = np.zeros((dirs, 2 * gates * hidden), np.float32) if b is None else b
    weights = [_reorder(w, node.op, dirs, hidden), _biases(node.op, b, dirs, hidden),
               _reorder(r, node.op, dirs, hidden)]
    params = {0: hidden, 1: int(weights[0].size), 2: DIRECTIONS[direction]}
    if batch != 1:
        run = BatchRun(node.op, batch, 1 - batch_at, dirs, hidden, size, STATE_INPUTS[node.op])
        return batch_in_time(graph, node, run, params, weights) or per_sequence(graph, node, run, params, weights)
    made, x_rows, _ = _sequence_input(graph, node, size, batch_at)
    state_nodes, states = _states(graph, node, dirs, hidden)
    state_outs = _state_outputs(graph, node, dirs, hidden)
    y = node.outputs[0] if node.outputs and node.outputs[0] and graph.use_count(node.outputs[0]) else ""
    rows = graph.fresh_name(f"{node.name}_rows")
    graph.add_tensor(Tensor(rows, (seq_len, dirs * hidden)))
    made += state_nodes
    made.append(layer(node, graph, node.op, [x_rows, *states], [rows, *state_outs], params, weights))
    if y:    # (T, dirs*H) -> Y's (T, dirs, H)
        if not _fits(graph.tensors[y].ncnn_shape, (seq_len, dirs, hidden)):
            raise fail(node, graph, f"output Y has shape {graph.tensors[y].shape}; expected the "
                                    f"sequence of {dirs} direction(s) x {hidden} with batch 1")
        made.append(reshape_layer(graph, node, rows, y, {}, target=(seq_len, dirs, hidden), suffix="_y"))
    return made
