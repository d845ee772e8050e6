"""One step of a recurrence as torch writes it when a Python loop calls LSTMCell, GRUCell or
RNNCell (the export unrolls the loop, one copy of the cell per step), matched on ONNX nodes:

    LSTM  gates = Gemm(h, W_hh, b_hh) + Gemm(x, W_ih, b_ih);  i, f, g, o = Split(gates, 4)
          c' = sigmoid(f) * c + sigmoid(i) * tanh(g);          h' = sigmoid(o) * tanh(c')
    GRU   r, z, n from Split(Gemm(x, W_ih, b_ih), 3) and Split(Gemm(h, W_hh, b_hh), 3):
          r = sigmoid(hr + ir), z = sigmoid(hz + iz), n = tanh(in + hn * r), h' = (h - n) * z + n
    RNN   h' = tanh(Gemm(h, W_hh, b_hh) + Gemm(x, W_ih, b_ih))

Operands of Add and Mul match in either order. Weights come back in torch's gate order
(LSTM i f g o, GRU r z n). A match says which tensors only the cell reads (`inner`): the pass
refuses a chain whose inner tensors something else reads.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from converter.ir import Graph, Node

from converter.rewrite.patterns import other, sole_reader


@dataclass
class Cell:
    kind: str                       # "LSTM", "GRU" or "RNN"
    x: str                          # the step's input [B, I]
    h_in: str
    h_out: str
    weights: tuple                  # W_ih [G*H, I], W_hh [G*H, H], b_ih [G*H], b_hh [G*H] (torch gate order)
    nodes: list[Node]
    inner: set[str] = field(default_factory=set)
    c_in: str | None = None
    c_out: str | None = None
    h_gemm_input: str = ""         # what the recurrent Gemm reads (GRU's h - n may read an equal constant)

    @property
    def hidden(self) -> int:
        return self.weights[1].shape[1]


@dataclass
class _Gemm:
    node: Node
    a: str
    w: np.ndarray
    b: np.ndarray


def _producer(graph: Graph, name: str, *ops: str) -> Node | None:
    node = graph.producer(name) if name else None
    return node if node is not None and not node.ncnn and node.op in ops else None


def _gemm(graph: Graph, name: str) -> _Gemm | None:
    """A = x @ W^T + b with constant W (and b), torch's Linear as a Gemm; read only by its cell."""
    node = _producer(graph, name, "Gemm")
    if node is None or graph.use_count(name) != 1 or len(node.inputs) < 2:
        return None
    attrs = node.attrs
    if attrs.get("alpha", 1.0) != 1.0 or attrs.get("beta", 1.0) != 1.0 or attrs.get("transA", 0):
        return None
    w = graph.value(node.inputs[1])
    if w is None or w.ndim != 2 or w.dtype != np.float32:
        return None
    w = w if attrs.get("transB", 0) else w.T
    b = graph.value(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else np.zeros(w.shape[0], np.float32)
    if b is None or b.size not in (1, w.shape[0]) or b.ndim > 1 and b.shape[0] != 1:
        return None
    return _Gemm(node, node.inputs[0], w, np.broadcast_to(b.reshape(-1), (w.shape[0],)).astype(np.float32))


def _split(graph: Graph, name: str, parts: int) -> Node | None:
    """Split of a [B, parts * H] tensor into `parts` equal pieces along its last axis."""
    node = _producer(graph, name, "Split")
    x = graph.tensors[node.inputs[0]] if node is not None else None
    if node is None or len(node.outputs) != parts or x.rank != 2 or x.shape[1] is None:
        return None
    if node.attrs.get("axis", 0) not in (1, -1) or x.shape[1] % parts:
        return None
    sizes = node.attrs.get("split")
    if sizes is None and len(node.inputs) > 1 and node.inputs[1]:
        value = graph.value(node.inputs[1])
        sizes = None if value is None else value.reshape(-1).tolist()
        if value is None:
            return None
    if sizes is not None and list(sizes) != [x.shape[1] // parts] * parts:
        return None
    return node


def _reader(graph: Graph, name: str, op: str, other_input: str | None = None) -> Node | None:
    """The only reader of `name`, of type `op`, whose other operand is `other_input` if given."""
    node = sole_reader(graph, name, op)
    if node is None or other_input is not None and other(node, name) != other_input:
        return None
    return node


def _orient(graph: Graph, pair: list[_Gemm], hidden: int, state_op: str) -> tuple[_Gemm, _Gemm] | None:
    """(recurrent, input) Gemms of a cell: the recurrent one multiplies by [G*H, H]; when the input
    size is H too, the one reading a previous step's state (or a constant) is, else torch's order."""
    fits = [g.w.shape[1] == hidden for g in pair]
    if fits == [True, False]:
        return pair[0], pair[1]
    if fits == [False, True]:
        return pair[1], pair[0]
    if not all(fits):
        return None
    state = [graph.value(g.a) is not None or _producer(graph, g.a, state_op, "ConstantOfShape") is not None
             for g in pair]
    return (pair[1], pair[0]) if state == [False, True] else (pair[0], pair[1])


def lstm_cell(graph: Graph, split: Node) -> Cell | None:
    add = _producer(graph, split.inputs[0], "Add")
    if add is None or _split(graph, split.outputs[0], 4) is not split or len(add.inputs) != 2:
        return None
    pair = [_gemm(graph, i) for i in add.inputs]
    if None in pair or pair[0].w.shape[0] != pair[1].w.shape[0] or pair[0].w.shape[0] % 4:
        return None
    hidden = pair[0].w.shape[0] // 4
    oriented = _orient(graph, pair, hidden, "Mul")
    if oriented is None or graph.use_count(add.outputs[0]) != 1:
        return None
    hh, ih = oriented
    acts = [sole_reader(graph, o, op) for o, op in zip(split.outputs, ("Sigmoid", "Sigmoid", "Tanh", "Sigmoid"))]
    if None in acts:
        return None
    i, f, g, o = (a.outputs[0] for a in acts)
    mul_ig = _reader(graph, g, "Mul", i)
    mul_fc = sole_reader(graph, f, "Mul")
    if mul_ig is None or mul_fc is None or sole_reader(graph, i, "Mul") is not mul_ig:
        return None
    add_c = _reader(graph, mul_ig.outputs[0], "Add", mul_fc.outputs[0])
    if add_c is None or sole_reader(graph, mul_fc.outputs[0], "Add") is not add_c:
        return None
    c_out = add_c.outputs[0]
    tanh_c = [r for r in graph.consumers(c_out) if r.op == "Tanh" and not r.ncnn]
    if len(tanh_c) != 1:
        return None
    mul_h = _reader(graph, tanh_c[0].outputs[0], "Mul", o)
    if mul_h is None or sole_reader(graph, o, "Mul") is not mul_h:
        return None
    nodes = [hh.node, ih.node, add, split, *acts, mul_ig, mul_fc, add_c, tanh_c[0], mul_h]
    inner = {t for n in nodes for t in n.outputs} - {c_out, mul_h.outputs[0]}
    return Cell("LSTM", ih.a, hh.a, mul_h.outputs[0], (ih.w, hh.w, ih.b, hh.b), nodes, inner,
                c_in=other(mul_fc, f), c_out=c_out, h_gemm_input=hh.a)


def gru_cell(graph: Graph, tanh_n: Node) -> Cell | None:
    add_n = _producer(graph, tanh_n.inputs[0], "Add")
    if add_n is None or len(add_n.inputs) != 2 or graph.use_count(add_n.outputs[0]) != 1:
        return None
    for i_n, rest in (add_n.inputs, add_n.inputs[::-1]):
        mul = _producer(graph, rest, "Mul")
        split_i = _split(graph, i_n, 3)
        if mul is None or split_i is None or split_i.outputs[2] != i_n or graph.use_count(rest) != 1:
            continue
        for h_n, r in (mul.inputs, mul.inputs[::-1]):
            split_h, sig_r = _split(graph, h_n, 3), _producer(graph, r, "Sigmoid")
            if split_h is not None and split_h.outputs[2] == h_n and sig_r is not None:
                return _gru_rest(graph, tanh_n, add_n, mul, split_i, split_h, sig_r)
    return None


def _gru_rest(graph: Graph, tanh_n: Node, add_n: Node, mul: Node, split_i: Node, split_h: Node,
              sig_r: Node) -> Cell | None:
    ih, hh = _gemm(graph, split_i.inputs[0]), _gemm(graph, split_h.inputs[0])
    if ih is None or hh is None or ih.w.shape[0] != hh.w.shape[0] or hh.w.shape[0] != 3 * hh.w.shape[1]:
        return None
    add_r = _producer(graph, sig_r.inputs[0], "Add")
    if add_r is None or sorted(add_r.inputs) != sorted([split_i.outputs[0], split_h.outputs[0]]):
        return None
    add_z = _reader(graph, split_i.outputs[1], "Add", split_h.outputs[1])
    sig_z = sole_reader(graph, add_z.outputs[0], "Sigmoid") if add_z is not None else None
    n = tanh_n.outputs[0]
    readers = graph.consumers(n)
    sub = [r for r in readers if r.op == "Sub" and r.inputs[1] == n and r.inputs[0] != n]
    if sig_z is None or len(readers) != 2 or len(sub) != 1 or graph.use_count(n) != 2:
        return None
    mul_z = _reader(graph, sub[0].outputs[0], "Mul", sig_z.outputs[0])
    add_h = _reader(graph, mul_z.outputs[0], "Add", n) if mul_z is not None else None
    if add_h is None or sole_reader(graph, sig_z.outputs[0], "Mul") is not mul_z:
        return None
    if any(sole_reader(graph, t, "Add", "Mul") is None for t in (*split_i.outputs, *split_h.outputs, sig_r.outputs[0])):
        return None
    nodes = [ih.node, hh.node, split_i, split_h, add_r, sig_r, add_z, sig_z, mul, add_n, tanh_n, sub[0],
             mul_z, add_h]
    inner = {t for node in nodes for t in node.outputs} - {add_h.outputs[0]}
    return Cell("GRU", ih.a, sub[0].inputs[0], add_h.outputs[0], (ih.w, hh.w, ih.b, hh.b), nodes, inner,
                h_gemm_input=hh.a)


def rnn_cell(graph: Graph, tanh: Node) -> Cell | None:
    add = _producer(graph, tanh.inputs[0], "Add")
    if add is None or len(add.inputs) != 2 or graph.use_count(add.outputs[0]) != 1:
        return None
    pair = [_gemm(graph, i) for i in add.inputs]
    if None in pair or pair[0].w.shape[0] != pair[1].w.shape[0]:
        return None
    oriented = _orient(graph, pair, pair[0].w.shape[0], "Tanh")
    if oriented is None:
        return None
    hh, ih = oriented
    nodes = [hh.node, ih.node, add, tanh]
    return Cell("RNN", ih.a, hh.a, tanh.outputs[0], (ih.w, hh.w, ih.b, hh.b), nodes,
                {hh.node.outputs[0], ih.node.outputs[0], add.outputs[0]}, h_gemm_input=hh.a)


def match_cell(graph: Graph, node: Node) -> Cell | None:
    """The cell `node` anchors: an LSTM's 4-way Split, a GRU's candidate Tanh or an RNN's Tanh."""
    if node.ncnn:
        return None
    if node.op == "Split" and len(node.outputs) == 4:
        return lstm_cell(graph, node)
    if node.op == "Tanh":
        return gru_cell(graph, node) or rnn_cell(graph, node)
    return None
