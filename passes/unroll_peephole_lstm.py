"""An LSTM with peephole weights (input P; madmom's beat-tracking BLSTMs) over a static length is written
out step by step in ONNX ops, which lower to ncnn layers: exact, slower than one LSTM layer.

ncnn's LSTM has no peepholes. Per direction: the input products of every step as one MatMul (plus both
biases), then per step the recurrent product, the gates i, o, f, c split off, and
    i = sigmoid(i + p_i * c_prev), f = sigmoid(f + p_f * c_prev), c = f * c_prev + i * tanh(c),
    o = sigmoid(o + p_o * c), h = o * tanh(c)
(ONNX's LSTM with its default activations). A reverse direction walks the steps backwards. Only the
default activations, no clip, no input_forget, layout 0 and no sequence_lens are unrolled; other LSTMs
stay for the lowering, which refuses peepholes naming --input-shape when the length is unknown. One walk.
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node, Tensor

from converter.rewrite.subgraphs import refine_shapes

DEFAULT = ["Sigmoid", "Tanh", "Tanh"]


def _unrollable(graph: Graph, node: Node) -> bool:
    a = node.attrs
    x = graph.tensors[node.inputs[0]]
    peep = graph.value(node.inputs[7]) if len(node.inputs) > 7 and node.inputs[7] else None
    weights = [graph.value(n) if n else None for n in (node.inputs + [""] * 4)[1:4]]
    return (peep is not None and bool(np.any(peep)) and x.shape is not None and None not in x.shape
            and all(w is not None for w in weights[:2]) and a.get("clip") is None
            and not a.get("input_forget", 0) and not a.get("layout", 0)
            and not (len(node.inputs) > 4 and node.inputs[4])
            and [str(s) for s in a.get("activations") or DEFAULT * 2][:3] == DEFAULT)


class _Emit:
    def __init__(self, graph: Graph, node: Node):
        self.graph, self.node = graph, node

    def const(self, value) -> str:
        return self.graph.add_constant(f"{self.node.name}_c", np.asarray(value)).name

    def __call__(self, op: str, inputs: list[str], attrs: dict | None = None, out: str | None = None) -> str:
        out = out or self.graph.fresh_name(f"{self.node.name}_{op.lower()}")
        if out not in self.graph.tensors:
            self.graph.add_tensor(Tensor(out, None))
        new = Node(self.graph.fresh_name(f"{self.node.name}_{op}"), op, inputs, [out], dict(attrs or {}),
                   origin=self.node.name)
        self.graph.add_node(new)
        refine_shapes(self.graph, new)
        return out


def _direction(e: _Emit, x: str, d: int, reverse: bool, steps: int, hidden: int) -> tuple[list[str], str, str]:
    g, node = e.graph, e.node
    w, r = g.value(node.inputs[1])[d], g.value(node.inputs[2])[d]
    b = g.value(node.inputs[3])[d] if len(node.inputs) > 3 and node.inputs[3] else np.zeros(8 * hidden, np.float32)
    p = g.value(node.inputs[7])[d]
    batch = g.tensors[x].shape[1]
    xw = e("Add", [e("MatMul", [x, e.const(w.T.astype(np.float32))]),
                   e.const((b[:4 * hidden] + b[4 * hidden:]).astype(np.float32))])

    def initial(slot: int) -> str:
        if len(node.inputs) > slot and node.inputs[slot]:
            return e("Gather", [node.inputs[slot], e.const(np.int64(d))], {"axis": 0})
        return e.const(np.zeros((batch, hidden), np.float32))
    h, c = initial(5), initial(6)
    rt = e.const(r.T.astype(np.float32))
    p_i, p_o, p_f = (e.const(p[k * hidden:(k + 1) * hidden].astype(np.float32)) for k in range(3))
    split = e.const(np.array([hidden] * 4, np.int64))
    outputs = [None] * steps
    for t in (reversed(range(steps)) if reverse else range(steps)):
        gates = e("Add", [e("Gather", [xw, e.const(np.int64(t))], {"axis": 0}), e("MatMul", [h, rt])])
        parts = [g.fresh_name(f"{node.name}_gate") for _ in range(4)]
        for name in parts:
            g.add_tensor(Tensor(name, None))
        gate_split = Node(g.fresh_name(f"{node.name}_Split"), "Split", [gates, split], parts, {"axis": 1},
                          origin=node.name)
        g.add_node(gate_split)
        refine_shapes(g, gate_split)
        i_g, o_g, f_g, c_g = parts
        i = e("Sigmoid", [e("Add", [i_g, e("Mul", [p_i, c])])])
        f = e("Sigmoid", [e("Add", [f_g, e("Mul", [p_f, c])])])
        c = e("Add", [e("Mul", [f, c]), e("Mul", [i, e("Tanh", [c_g])])])
        o = e("Sigmoid", [e("Add", [o_g, e("Mul", [p_o, c])])])
        h = e("Mul", [o, e("Tanh", [c])])
        outputs[t] = h
    return outputs, h, c


def unroll_peephole_lstm(graph: Graph) -> dict:
    unrolled = 0
    for node in graph.onnx_nodes_of("LSTM"):
        if not _unrollable(graph, node):
            continue
        e = _Emit(graph, node)
        steps, hidden = graph.tensors[node.inputs[0]].shape[0], int(node.attrs["hidden_size"])
        direction = node.attrs.get("direction", "forward")
        reverse = {"forward": [False], "reverse": [True], "bidirectional": [False, True]}[direction]
        graph.remove_node(node)
        ys, hs, cs = [], [], []
        one, zero = e.const(np.array([1], np.int64)), e.const(np.array([0], np.int64))
        for d, backwards in enumerate(reverse):
            seq, h, c = _direction(e, node.inputs[0], d, backwards, steps, hidden)
            ys.append(e("Concat", [e("Unsqueeze", [s, zero]) for s in seq], {"axis": 0}))   # [T, B, H]
            hs.append(e("Unsqueeze", [h, zero]))
            cs.append(e("Unsqueeze", [c, zero]))
        wanted = list(node.outputs) + [""] * (3 - len(node.outputs))
        if wanted[0]:
            e("Concat", [e("Unsqueeze", [y, one]) for y in ys], {"axis": 1}, out=wanted[0])
        for out, parts in ((wanted[1], hs), (wanted[2], cs)):
            if out:
                e("Concat", parts, {"axis": 0}, out=out)
        unrolled += 1
    return {"peephole_lstms_unrolled": unrolled}
