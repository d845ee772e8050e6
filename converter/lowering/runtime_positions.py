"""0, 1, ..., n - 1 as float along one axis, n an extent known only at run time.

ArgMax and one-hot lookups compare with the positions of an axis; at a fixed extent those
are a constant, at a run-time sequence length they are built when the model runs: a fill of
ones sized by the extent (lowering/fill.py: MemoryData + Interp), its running sum
(CumulativeSum: 1, 2, ..., n, exact in float32 below 2**24), minus one.
"""
from __future__ import annotations

import numpy as np

from converter.ncnn_side.layers import BINARY_OPS
from converter.shapes.runtime_fill import FILL_VALUE
from converter.shapes.symbolic import SHAPE_TERMS, Ref

from ..ir import Graph, Node
from . import LOWERINGS
from .common import layer, new_tensor


def runtime_positions(graph: Graph, node: Node, source: str, axis: int, shape: tuple,
                      batch_axis: int | None, stem: str) -> tuple[list[Node], str]:
    """Layers giving a tensor of ONNX `shape` (1 everywhere but one None) holding the positions
    0..n-1 along its unknown axis, n being the extent of `source`'s `axis`."""
    terms = [Ref(source, axis) if d is None else int(d) for d in shape]
    ones, counts, positions = (new_tensor(graph, f"{stem}_{tag}", shape, batch_axis)
                               for tag in ("ones", "counts", "positions"))
    origin = node.origin or node.name
    layers = LOWERINGS["ConstantOfShape"](graph, Node(f"{node.name}_{stem}_ones", "ConstantOfShape", [], [ones],
                                                      meta={SHAPE_TERMS: terms, FILL_VALUE: 1.0}, origin=origin))
    along = graph.add_constant(f"{stem}_axis", np.array(shape.index(None), np.int64)).name
    layers += LOWERINGS["CumSum"](graph, Node(f"{node.name}_{stem}_count", "CumSum", [ones, along], [counts],
                                              {"exclusive": 0, "reverse": 0}, origin=origin))
    layers.append(layer(node, graph, "BinaryOp", [counts], [positions], {0: BINARY_OPS["sub"], 1: 1, 2: 1.0},
                        suffix=f"_{stem}"))
    return layers, positions
