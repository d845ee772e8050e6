"""A recurrence written out step by step becomes one ONNX LSTM, GRU or RNN (then ncnn's layer).

A Python loop over torch's LSTMCell / GRUCell / RNNCell exports as one copy of the cell per step
(converter/rewrite/recurrent_cells.py), each with its own Gemms reading the same weights: ncnn would
store the 4096x400 input projection of captcha-whisperer's CRNN 40 times and run 40 small products.
A chain of such cells, step k's state read by step k+1 and the same weights in every step, is
exactly ONNX's recurrent op over the steps' inputs stacked in step order:

    LSTM(X, W, R, B, initial_h=h0, initial_c=c0) with W, R, B in ONNX's gate order (i o f c, z r h)

GRU's candidate is torch's, r * (W_hn h + b_hn): ONNX's linear_before_reset=1, which ncnn computes.
X is the tensor the steps gather from when they take its rows 0..T-1 in order (forward) or
T-1..0 (direction reverse), else the steps' inputs stacked by a Concat. Step k's state, where
something besides the next step reads it, is row k of Y; the final states are Y_h / Y_c; a Concat
of all steps' Unsqueezed states (torch.stack) is Y itself. A zero initial state is left out.

A batch of B > 1 is ONNX's batch axis (the lowering runs it as one sequence with reset steps where
that is exact, lowering/recurrent_batch.py). Refused (left as it is): a chain whose inner
tensors (gates, an intermediate cell state) something outside it reads, steps whose weights
differ. One walk to match the cells, one to link them.
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node, Tensor

from converter.rewrite.fold import fold_node
from converter.rewrite.recurrent_cells import Cell, match_cell

# torch's gate order -> ONNX's: LSTM i f g o -> i o f c, GRU r z n -> z r h
TO_ONNX_GATES = {"LSTM": [0, 3, 1, 2], "GRU": [1, 0, 2], "RNN": [0]}


def _same_value(graph: Graph, a: str, b: str) -> bool:
    if a == b:
        return True
    va, vb = graph.value(a), graph.value(b)
    return va is not None and vb is not None and va.shape == vb.shape and np.array_equal(va, vb)


def _is_zero(graph: Graph, name: str) -> bool:
    value = graph.value(name)
    if value is not None:
        return not np.any(value)
    node = graph.producer(name)
    if node is None or node.op != "ConstantOfShape":
        return False
    fill = node.attrs.get("value")
    return fill is None or not np.any(np.asarray(fill))


def _link(graph: Graph, prev: Cell, cell: Cell) -> bool:
    return (cell.kind == prev.kind and cell.h_in == prev.h_out and (cell.kind != "LSTM" or cell.c_in == prev.c_out)
            and all(a.shape == b.shape and np.array_equal(a, b) for a, b in zip(prev.weights, cell.weights)))


def _chains(graph: Graph, cells: list[Cell]) -> list[list[Cell]]:
    by_state = {c.h_out: c for c in cells}
    successors: dict[str, list[Cell]] = {}
    for cell in cells:
        prev = by_state.get(cell.h_in)
        if prev is not None and prev is not cell and _link(graph, prev, cell):
            successors.setdefault(prev.h_out, []).append(cell)
    linked = {id(c) for after in successors.values() if len(after) == 1 for c in after}
    chains = []
    for cell in cells:
        if id(cell) in linked:
            continue
        chain = [cell]
        while len(successors.get(chain[-1].h_out, [])) == 1:
            chain.append(successors[chain[-1].h_out][0])
        if len(chain) > 1:
            chains.append(chain)
    return chains


def _usable(graph: Graph, chain: list[Cell]) -> bool:
    """Every step's input [B, I] of one known batch, every step's h read by its own recurrent Gemm,
    nothing outside reading inner tensors."""
    first = chain[0]
    x = graph.tensors[first.x]
    if x.shape is None or len(x.shape) != 2 or x.shape[1] != first.weights[0].shape[1] or x.dtype != np.float32:
        return False
    if not isinstance(x.shape[0], int) or any(graph.tensors[c.x].shape != x.shape for c in chain):
        return False
    if not all(_same_value(graph, c.h_in, c.h_gemm_input) for c in chain):
        return False
    names = {n.name for c in chain for n in c.nodes}
    private = [t for c in chain for t in c.inner] + [c.c_out for c in chain[:-1] if c.c_out]
    return not any(t in graph.outputs or any(r.name not in names for r in graph.consumers(t)) for t in private)


def _add(graph: Graph, stem: str, shape: tuple) -> str:
    name = graph.fresh_name(stem)
    graph.add_tensor(Tensor(name, shape, np.dtype(np.float32)))
    return name


def _axes_node(graph: Graph, op: str, x: str, axis: int, out: str, origin: str) -> Node:
    """Squeeze/Unsqueeze of one axis in the model's opset's form."""
    if graph.opset >= 13:
        axes = graph.add_constant(f"{out}_axes", np.array([axis], np.int64)).name
        node = Node(graph.fresh_name(f"{origin}_{op.lower()}"), op, [x, axes], [out])
    else:
        node = Node(graph.fresh_name(f"{origin}_{op.lower()}"), op, [x], [out], {"axes": [axis]})
    node.origin = origin
    return graph.add_node(node)


def _gathered_rows(graph: Graph, chain: list[Cell]) -> tuple[str, str] | None:
    """(X, direction) when step k reads row k of one [T, B, I] tensor (or row T-1-k)."""
    steps = len(chain)
    sources, rows = set(), []
    for cell in chain:
        node = graph.producer(cell.x)
        index = graph.value(node.inputs[1]) if node is not None and node.op == "Gather" else None
        if index is None or index.ndim != 0 or node.attrs.get("axis", 0) != 0:
            return None
        sources.add(node.inputs[0])
        rows.append(int(index) % steps)
    x = graph.tensors[next(iter(sources))]
    if len(sources) != 1 or x.shape is None or len(x.shape) != 3 or x.shape[0] != steps:
        return None
    if rows == list(range(steps)):
        return x.name, "forward"
    return (x.name, "reverse") if rows == list(range(steps))[::-1] else None


def _sequence(graph: Graph, chain: list[Cell], batch: int, origin: str) -> tuple[str, str]:
    gathered = _gathered_rows(graph, chain)
    if gathered is not None:
        return gathered
    size = chain[0].weights[0].shape[1]
    rows = []
    for cell in chain:
        rows.append(_add(graph, f"{cell.x}_step", (1, batch, size)))
        _axes_node(graph, "Unsqueeze", cell.x, 0, rows[-1], origin)
    x = _add(graph, f"{origin}_steps", (len(chain), batch, size))
    graph.add_node(Node(graph.fresh_name(f"{origin}_stack"), "Concat", rows, [x], {"axis": 0}, origin=origin))
    return x, "forward"


def _state(graph: Graph, name: str, batch: int, hidden: int, origin: str) -> str:
    """An initial state [B, H] as ONNX's [1, B, H]; "" for zeros (the op's default)."""
    if _is_zero(graph, name):
        return ""
    value = graph.value(name)
    if value is not None:
        return graph.add_constant(f"{name}_initial", np.broadcast_to(value, (batch, hidden)).reshape(1, batch, hidden).astype(np.float32)).name
    out = _add(graph, f"{name}_initial", (1, batch, hidden))
    _axes_node(graph, "Unsqueeze", name, 0, out, origin)
    return out


def _stacked(graph: Graph, chain: list[Cell], rows: list[int], outside: dict[str, list[Node]]) -> Node | None:
    """A Concat on axis 0 of every step's Unsqueezed state in row order (torch.stack): Y itself."""
    concat = None
    for cell, _ in sorted(zip(chain, rows), key=lambda p: p[1]):
        readers = outside[cell.h_out]
        unsqueeze = readers[0] if len(readers) == 1 and cell.h_out not in graph.outputs else None
        if unsqueeze is None or unsqueeze.op != "Unsqueeze" or graph.use_count(unsqueeze.outputs[0]) != 1:
            return None
        axes = unsqueeze.attrs.get("axes")
        if axes is None and len(unsqueeze.inputs) > 1:
            value = graph.value(unsqueeze.inputs[1])
            axes = None if value is None else value.reshape(-1).tolist()
        reader = graph.consumers(unsqueeze.outputs[0])
        if axes != [0] or len(reader) != 1 or reader[0].op != "Concat" or reader[0].attrs.get("axis") != 0:
            return None
        if concat not in (None, reader[0]):
            return None
        concat = reader[0]
    ordered = [graph.consumers(c.h_out)[0].outputs[0] for c, _ in sorted(zip(chain, rows), key=lambda p: p[1])]
    return concat if concat is not None and concat.inputs == ordered else None


def _rewrite(graph: Graph, chain: list[Cell]) -> None:
    first, last, kind = chain[0], chain[-1], chain[0].kind
    steps, hidden = len(chain), first.hidden
    origin = first.nodes[0].origin or first.nodes[0].name
    names = {n.name for c in chain for n in c.nodes}
    outside = {c.h_out: [r for r in graph.consumers(c.h_out) if r.name not in names] for c in chain}
    w_ih, w_hh, b_ih, b_hh = first.weights
    order = TO_ONNX_GATES[kind]

    def onnx_gates(a: np.ndarray) -> np.ndarray:
        return a.reshape(len(order), hidden, *a.shape[1:])[order].reshape(a.shape)

    h0, c0 = first.h_in, first.c_in
    for cell in chain:
        for node in cell.nodes:
            graph.remove_node(node)
    batch = graph.tensors[first.x].shape[0]
    x, direction = _sequence(graph, chain, batch, origin)
    rows = list(range(steps)) if direction == "forward" else list(range(steps))[::-1]
    weights = [graph.add_constant(f"{origin}_{k}", v[None].astype(np.float32)).name for k, v in (
        ("W", onnx_gates(w_ih)), ("R", onnx_gates(w_hh)),
        ("B", np.concatenate([onnx_gates(b_ih), onnx_gates(b_hh)])))]
    states = [_state(graph, s, batch, hidden, origin) for s in ([h0, c0] if kind == "LSTM" else [h0])]
    y = _add(graph, f"{origin}_Y", (steps, 1, batch, hidden))
    finals = [_add(graph, f"{origin}_Y_{s}", (1, batch, hidden)) for s in ("h", "c")[:len(states)]]
    attrs = {"hidden_size": hidden, "direction": direction, **({"linear_before_reset": 1} if kind == "GRU" else {})}
    inputs = [x, *weights, "", *states]
    while inputs[-1] == "":
        inputs.pop()
    graph.add_node(Node(graph.fresh_name(f"{origin}_{kind}"), kind, inputs, [y, *finals], attrs, origin=origin))
    concat = _stacked(graph, chain, rows, outside)
    if concat is not None:
        stacked = concat.outputs[0]
        for node in [concat, *(outside[c.h_out][0] for c in chain)]:
            graph.remove_node(node)
        outside = {c.h_out: [] for c in chain}
    else:
        stacked = _add(graph, f"{origin}_Y_rows", (steps, batch, hidden))
    _axes_node(graph, "Squeeze", y, 1, stacked, origin)
    _final_states(graph, chain, rows, stacked, finals, outside, origin)


def _final_states(graph: Graph, chain: list[Cell], rows: list[int], stacked: str, finals: list[str],
                  outside: dict[str, list[Node]], origin: str) -> None:
    """Step k's h where something outside the chain reads it (row k of Y); the last c from Y_c."""
    last = chain[-1]
    for cell, row in zip(chain, rows):
        if not outside[cell.h_out] and cell.h_out not in graph.outputs:
            continue
        if cell is last:
            _axes_node(graph, "Squeeze", finals[0], 0, cell.h_out, origin)
            continue
        index = graph.add_constant(f"{origin}_row{row}", np.array(row, np.int64)).name
        graph.add_node(Node(graph.fresh_name(f"{origin}_step{row}"), "Gather", [stacked, index], [cell.h_out],
                            {"axis": 0}, origin=origin))
    if last.c_out and graph.use_count(last.c_out):
        _axes_node(graph, "Squeeze", finals[1], 0, last.c_out, origin)


def fuse_recurrent_cells(graph: Graph) -> dict:
    anchors = [n for n in graph.topological() if n.op in ("Split", "Tanh") and not n.ncnn]
    if not anchors:
        return {"recurrent_cells_fused": 0}
    # the Splits' sizes, the steps' row indexes, a weight torch shares through an Identity
    for node in graph.topological():
        if node.op == "Constant" or node.op == "Identity" and graph.value(node.inputs[0]) is not None:
            fold_node(graph, node)
    cells = [c for c in (match_cell(graph, n) for n in anchors if n.name in graph.nodes) if c is not None]
    fused = 0
    for chain in _chains(graph, cells):
        if _usable(graph, chain):
            _rewrite(graph, chain)
            fused += len(chain)
    if fused:
        graph.remove_unused_tensors()      # (infer_shapes, next but one, assigns the new tensors' batch axes)
    return {"recurrent_cells_fused": fused}
