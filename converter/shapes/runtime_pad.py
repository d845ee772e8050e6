"""A Pad by amounts computed from run-time sizes, as ncnn layers can run it.

ncnn's Padding takes constant amounts only. Exporters compute pads from tensor sizes: the classic
U-Net pads an upsampled map by `skip.size(3) - up.size(3)`, split in halves. Over the inputs'
extents (converter/shapes/symbolic_shapes.py) such a pad is a formula of one extent, and usually a small,
bounded one: 0 or -1 after a transposed conv of a stride-2 conv's output, 0 or 1 after an upsampled
floor-mode pool. So the Pad pads by the largest value each amount takes at any probed extent (a
constant Padding, none where no amount is ever positive) and a Slice to run-time bounds (Crop
19/20/21 expressions) keeps the window ONNX's pads select: pad by P, start at P - begin. The values a
window sees do not depend on P (zeros or the constant, the replicated edge); a reflect Pad is taken
only where it never pads (a reflection by P could need more values than a small input has). Amounts that read several extents, or exceed MAX_PAD at
some probe, stay a Pad with run-time amounts, which the lowering refuses.
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node, Tensor
from converter.shapes.symbolic import SHAPE_TERMS, SLICE_TERMS, Term, extent, op, pin_refs, pinned_inputs, refs
from converter.shapes.symbolic_shapes import SymbolicShapes
from converter.shapes.term_arithmetic import evaluate

PROBES = range(1, 4097)      # the values of the one extent a pad reads that are tried
MAX_PAD = 32                 # a larger bound pads every size by that much before the crop


def largest(term: Term) -> int | None:
    """The largest value `term` takes over the probed values of the one extent it reads."""
    symbols = set(refs(term))
    if not symbols:
        return term
    if len(symbols) != 1:
        return None
    symbol = symbols.pop()
    values = [evaluate(term, {symbol: n}) for n in PROBES]
    return None if None in values else max(values)


def bounded_pad(graph: Graph, node: Node, shapes: SymbolicShapes) -> Node | None:
    """A Pad with run-time amounts (node.meta[SHAPE_TERMS], express_shapes) as a constant Pad by the
    amounts' bounds and a Slice to run-time bounds; returns the Slice, or None (left as it is)."""
    pads, x = node.meta[SHAPE_TERMS], node.inputs[0]
    rank = len(pads) // 2
    bounds = [largest(shapes.canon(t)) for t in pads]
    if graph.tensors[x].rank != rank or any(b is None or b > MAX_PAD for b in bounds):
        return None
    over = [max(b, 0) for b in bounds]
    mode = node.attrs.get("mode", "constant")
    if any(over) and (mode.decode() if isinstance(mode, bytes) else mode) not in ("constant", "edge"):
        return None         # a reflection by more than ONNX asks may need more values than a small input has
    axes = [i for i in range(rank) if pads[i] != 0 or pads[rank + i] != 0]
    given = node.inputs[:len(node.inputs) - len(pinned_inputs(node))]
    graph.remove_node(node)
    source = x
    if any(over):
        t = graph.tensors[x]
        shape = None if t.shape is None else tuple(
            None if d is None else d + over[i] + over[rank + i] for i, d in enumerate(t.shape))
        source = graph.add_tensor(Tensor(graph.fresh_name(f"{node.outputs[0]}_padded"), shape, t.dtype,
                                         batch_axis=t.batch_axis)).name
        amounts = graph.add_constant(f"{node.name}_bounds", np.array(over, np.int64)).name
        graph.add_node(Node(graph.fresh_name(f"{node.name}_bound"), "Pad", [x, amounts, *given[2:3]], [source],
                            attrs=dict(node.attrs),
                            origin=node.origin or node.name))
    # the window: from P_begin - begin to the padded extent - P_end + end
    starts = [op("-", over[i], pads[i]) for i in axes]
    ends = [op("+", op("-", extent(graph, source, i), over[rank + i]), pads[rank + i]) for i in axes]
    cut = graph.add_node(Node(node.name, "Slice", [source], list(node.outputs), origin=node.origin or node.name,
                              meta={SLICE_TERMS: {"starts": starts, "ends": ends, "axes": axes}}))
    pin_refs(graph, cut, [*starts, *ends])
    return cut
