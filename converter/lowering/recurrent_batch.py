"""A batch of B > 1 sequences through ncnn's LSTM / GRU / RNN, which run one sequence each.

batch_in_time: the sequences one after another as ONE sequence, each followed by a reset step, so
the .bin holds the weights once and the layer runs B * (T + 1) steps (the B layers below run
B * T). The input gains a flag column, 0 on every real step and 1 on the reset steps that end
each sequence (a Padding and a Concat of a B x (I + 1) constant):

    step rows   x_1 0 | ... | x_T 0 | 0 ... 0 1 | x_1 0 | ...     (per sequence, T + 1 rows)

The flag's column in W_xc is 0 on real steps (0 * w adds nothing), so they compute exactly what
they did. On a reset step it drives the sigmoid gates (LSTM I F O, GRU R U) to pre-activations
below -100 whatever h is: |h| <= 1 (h = o tanh(c), or a blend of tanh values and zeros), so
w = -(sum |W_hc row| + |bias| + 100) bounds W_hc h + bias. sigmoid(-100) is 4e-44 (ncnn's x86
exp clamps at 88: 4e-39), so h and c leave the reset step below 1e-36 instead of 0, which
nothing after them can see next to float rounding; GRU's candidate gets -b_WN, cancelling its
input bias exactly (an fp16 .bin rounds both alike). The reset rows are cropped from the output.
Only where exact: LSTM and GRU (an RNN's tanh has no gate to close), zero initial states
(constants or left out), Y and Y_h read, not Y_c (Y_h is a row of Y per direction; the cell
state is in no output), and |w| within fp16's range.

per_sequence: otherwise, one layer per sequence on its cropped rows, results stacked on the
batch axis; the weights are stored B times.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import Graph, Node, Tensor
from .common import fail, layer, reshape_layer
from .transpose import ORDER_TYPE

RESET_MARGIN = 100.0           # a sigmoid gate's pre-activation on a reset step is below -RESET_MARGIN
FP16_LIMIT = 60000.0           # flag weights stay finite in an fp16 .bin


@dataclass
class BatchRun:
    op: str
    batch: int
    layout: int                    # ONNX's layout attribute: X [T, B, I] (0) or [B, T, I] (1)
    dirs: int
    hidden: int
    size: int
    state_slots: tuple             # the node's initial-state input slots


def _read(graph: Graph, name: str) -> str:
    return name if name and graph.use_count(name) else ""


def _flag_column(op: str, weights: list, run: BatchRun) -> np.ndarray | None:
    """W_xc's extra column (dirs, gates * H): the reset step's weights, None if not fp16-safe."""
    gates = 4 if op == "LSTM" else 3
    hidden = run.hidden
    w_hc = weights[2].reshape(run.dirs, gates * hidden, hidden)
    bias = weights[1].reshape(run.dirs, 4, hidden)
    bound = np.abs(w_hc).sum(axis=2).reshape(run.dirs, gates, hidden)
    flag = np.zeros((run.dirs, gates, hidden), np.float64)
    closed = 3 if op == "LSTM" else 2                      # LSTM I F O (not G), GRU R U
    flag[:, :closed] = -(bound[:, :closed] + np.abs(bias[:, :closed]) + RESET_MARGIN)
    if op == "GRU":
        flag[:, 2] = -bias[:, 2]                           # N's input bias, cancelled
    if np.abs(flag).max() > FP16_LIMIT:
        return None
    return flag.astype(np.float32).reshape(run.dirs, gates * hidden)


def _zero_states(graph: Graph, node: Node, run: BatchRun) -> bool:
    for slot in run.state_slots:
        name = node.inputs[slot] if slot < len(node.inputs) else ""
        value = graph.value(name) if name else np.zeros(1)
        if value is None or np.any(value):
            return False
    return True


def _tensor(graph: Graph, stem: str, shape: tuple) -> str:
    name = graph.fresh_name(stem)
    graph.add_tensor(Tensor(name, shape))
    return name


def batch_in_time(graph: Graph, node: Node, run: BatchRun, params: dict, weights: list) -> list[Node] | None:
    """The batch as one sequence with reset steps; None where that would not be exact."""
    x = graph.tensors[node.inputs[0]]
    y, y_h, y_c = ([_read(graph, o) for o in node.outputs] + ["", "", ""])[:3]
    if run.op == "RNN" or not (y or y_h) or y_c or x.batch_axis is not None or not _zero_states(graph, node, run):
        return None
    flag = _flag_column(run.op, weights, run)
    if flag is None:
        return None
    b, dirs, hidden, size = run.batch, run.dirs, run.hidden, run.size
    steps = x.shape[run.layout]
    wanted = {y: (b, steps, dirs, hidden) if run.layout else (steps, dirs, b, hidden),
              y_h: (b, dirs, hidden) if run.layout else (dirs, b, hidden)}
    if any(o and (graph.tensors[o].batch_axis is not None or graph.tensors[o].ncnn_shape != shape)
           for o, shape in wanted.items()):
        return None
    made, stem = [], node.name
    seqs = x.name
    if run.layout == 0:                                    # (T, B, I) -> (B, T, I)
        seqs = _tensor(graph, f"{stem}_by_sequence", (b, steps, size))
        made.append(layer(node, graph, "Permute", [x.name], [seqs], {0: ORDER_TYPE[(3, (1, 0, 2))]},
                          suffix="_by_sequence"))
    flagged = _tensor(graph, f"{stem}_flagged", (b, steps, size + 1))
    made.append(layer(node, graph, "Padding", [seqs], [flagged], {3: 1}, suffix="_flag_column"))
    reset_row = np.zeros((b, 1, size + 1), np.float32)
    reset_row[..., -1] = 1
    resets = graph.add_constant(f"{stem}_reset_steps", reset_row).name
    joined = _tensor(graph, f"{stem}_with_resets", (b, steps + 1, size + 1))
    made.append(layer(node, graph, "Concat", [flagged, resets], [joined], {0: 1}, suffix="_reset_steps"))
    rows = _tensor(graph, f"{stem}_steps", (b * (steps + 1), size + 1))
    made.append(reshape_layer(graph, node, joined, rows, {}, suffix="_steps"))
    w_xc = np.concatenate([weights[0].reshape(dirs, -1, size), flag[..., None]], axis=2)
    out = _tensor(graph, f"{stem}_outputs", (b * (steps + 1), dirs * hidden))
    made.append(layer(node, graph, run.op, [rows], [out], {**params, 1: int(w_xc.size)},
                      [w_xc, *weights[1:]]))
    per_seq = _tensor(graph, f"{stem}_per_sequence", (b, steps + 1, dirs * hidden))
    made.append(reshape_layer(graph, node, out, per_seq, {}, suffix="_per_sequence"))
    real = _tensor(graph, f"{stem}_real_steps", (b, steps, dirs * hidden))
    made.append(layer(node, graph, "Crop", [per_seq], [real], {9: [0], 10: [steps], 11: [1]}, suffix="_real_steps"))
    if y and run.layout:
        made.append(reshape_layer(graph, node, real, y, {}, suffix="_y"))
    elif y:
        split = _tensor(graph, f"{stem}_directions", (b, steps, dirs, hidden))
        made.append(reshape_layer(graph, node, real, split, {}, suffix="_directions"))
        made.append(layer(node, graph, "Permute", [split], [y], {0: ORDER_TYPE[(4, (1, 2, 0, 3))]}, suffix="_y"))
    if y_h:
        made += _final_hidden(graph, node, run, params[2], real, y_h, steps)
    return made


def _final_hidden(graph: Graph, node: Node, run: BatchRun, direction: int, real: str, y_h: str,
                  steps: int) -> list[Node]:
    """Y_h from the real steps (B, T, dirs * H): a forward pass ends at row T - 1, a reverse one at row 0."""
    b, hidden, made, parts = run.batch, run.hidden, [], []
    for d in range(run.dirs):
        row = 0 if direction == 1 or d == 1 else steps - 1
        part = _tensor(graph, f"{node.name}_final{d}", (b, 1, hidden))
        made.append(layer(node, graph, "Crop", [real], [part], {9: [row, d * hidden], 10: [row + 1, (d + 1) * hidden],
                                                               11: [1, 2]}, suffix=f"_final{d}"))
        parts.append(part)
    finals = parts[0]
    if run.dirs == 2:
        finals = _tensor(graph, f"{node.name}_finals", (b, 2, hidden))
        made.append(layer(node, graph, "Concat", parts, [finals], {0: 1}, suffix="_finals"))
    if run.layout:
        made.append(reshape_layer(graph, node, finals, y_h, {}, suffix="_y_h"))
    else:
        made.append(layer(node, graph, "Permute", [finals], [y_h], {0: ORDER_TYPE[(3, (1, 0, 2))]}, suffix="_y_h"))
    return made


# ---- one ncnn layer per sequence, same weights ----------------------------------------

def _crop_rows(graph: Graph, node: Node, name: str, axis: int, k: int, rows: tuple, made: list) -> str:
    """Sequence k of tensor `name` along ONNX `axis`, reshaped to the ncnn rows `rows`."""
    t = graph.tensors[name]
    ncnn_axis = t.ncnn_axis(axis)
    if ncnn_axis is None:
        raise fail(node, graph, f"'{name}' has its batch of {t.shape[axis]} on ncnn's dropped axis")
    picked_shape = tuple(1 if i == axis else d for i, d in enumerate(t.shape))
    picked = graph.fresh_name(f"{name}_seq{k}")
    graph.add_tensor(Tensor(picked, picked_shape, t.dtype, batch_axis=t.batch_axis))
    made.append(layer(node, graph, "Crop", [name], [picked], {9: [k], 10: [k + 1], 11: [ncnn_axis]},
                      suffix=f"_{picked}"))
    flat = graph.fresh_name(f"{picked}_rows")
    graph.add_tensor(Tensor(flat, rows, t.dtype))
    made.append(reshape_layer(graph, node, picked, flat, {}, suffix=f"_{flat}"))
    return flat


def per_sequence(graph: Graph, node: Node, run: BatchRun, params: dict, weights: list) -> list[Node]:
    """ncnn runs one sequence per layer: crop each, run it, stack the results on the batch axis."""
    batch, layout, dirs, hidden, size = run.batch, run.layout, run.dirs, run.hidden, run.size
    x = graph.tensors[node.inputs[0]]
    seq_len = x.shape[layout]
    state_at = 0 if layout else 1            # states are [dirs, B, H], or [B, dirs, H] with layout=1
    slots = run.state_slots
    given = [node.inputs[s] if s < len(node.inputs) and node.inputs[s] else None for s in slots]
    read = [o if o and graph.use_count(o) else "" for o in node.outputs[1:1 + len(slots)]]
    read += [""] * (len(slots) - len(read))
    y = node.outputs[0] if node.outputs and node.outputs[0] and graph.use_count(node.outputs[0]) else ""
    made: list[Node] = []
    pieces: dict[str, list[str]] = {o: [] for o in [y, *read] if o}
    for k in range(batch):
        x_rows = _crop_rows(graph, node, x.name, 1 - layout, k, (seq_len, size), made)
        states = []
        for name in given if any(given) else []:
            value = None if name is None else graph.value(name)
            if name is None or value is not None:
                value = np.zeros((dirs, hidden), np.float32) if value is None else np.take(value, k, state_at)
                states.append(graph.add_constant(f"{node.name}_state{k}", value.reshape(dirs, hidden)).name)
            else:
                states.append(_crop_rows(graph, node, name, state_at, k, (dirs, hidden), made))
        rows = graph.fresh_name(f"{node.name}_seq{k}")
        graph.add_tensor(Tensor(rows, (seq_len, dirs * hidden)))
        finals = []
        if any(read):
            for j in range(len(slots)):
                finals.append(graph.fresh_name(f"{node.name}_seq{k}_state{j}"))
                graph.add_tensor(Tensor(finals[-1], (dirs, hidden)))
        made.append(layer(node, graph, node.op, [x_rows, *states], [rows, *finals], params, weights,
                          suffix=f"_{rows}"))
        unstacked = {y: (rows, (1, seq_len, dirs, hidden) if layout else (seq_len, dirs, 1, hidden))}
        unstacked.update({o: (f, (1, dirs, hidden) if layout else (dirs, 1, hidden)) for o, f in zip(read, finals) if o})
        for out, (src, shape) in unstacked.items():
            if out:
                piece = graph.fresh_name(f"{out}_seq{k}")
                graph.add_tensor(Tensor(piece, shape))
                made.append(reshape_layer(graph, node, src, piece, {}, suffix=f"_{piece}"))
                pieces[out].append(piece)
    for out, parts in pieces.items():
        axis = 0 if layout else (2 if out == y else 1)
        if graph.tensors[out].batch_axis is not None:
            raise fail(node, graph, f"output '{out}' of batch {batch} has a batch axis in ncnn")
        made.append(layer(node, graph, "Concat", parts, [out], {0: axis}, suffix=f"_{out}_stack"))
    return made
