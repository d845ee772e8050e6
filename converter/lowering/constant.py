"""Shape and Constant: normally folded before lowering; a Shape left is refused, a Constant
left becomes a constant tensor."""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from . import lowers
from .common import depends_on, fail


# ---- Shape / Constant (Expand is in tile.py) ----------------------------------------------
@lowers("Shape")
def shape(graph: Graph, node: Node) -> list[Node]:
    """Shapes of known extents were folded to constants; one that is left cannot be computed in ncnn."""
    x = graph.tensors[node.inputs[0]]
    if not graph.use_count(node.outputs[0]):
        return []
    raise fail(node, graph, f"ncnn has no Shape layer and the extents {list(x.shape or [])} of '{x.name}' "
                            f"are not all known at conversion time: {depends_on(graph, x.name)}")


CONSTANT_ATTRS = {"value": None, "value_float": np.float32, "value_floats": np.float32,
                  "value_int": np.int64, "value_ints": np.int64}


@lowers("Constant")
def constant_node(graph: Graph, node: Node) -> list[Node]:
    """Normally folded; if one survives, its value becomes a constant tensor (MemoryData later)."""
    for key, dtype in CONSTANT_ATTRS.items():
        if key in node.attrs:
            value = np.asarray(node.attrs[key], dtype=dtype)
            break
    else:
        raise fail(node, graph, f"unsupported Constant attributes {sorted(node.attrs)}")
    t = graph.tensors[node.outputs[0]]
    t.value, t.shape, t.dtype, t.batch_axis = value, tuple(value.shape), value.dtype, None
    return []


