"""Give each constant tensor still consumed by an ncnn layer a MemoryData layer.

Constants absorbed as weights (Conv kernels, ...) are no longer consumed and
get nothing. Runs after the broadcast pass so MemoryData holds the final
(reshaped) dims.
"""
from __future__ import annotations

import numpy as np

from converter.ir import ConversionError, Graph, Node
from converter.ncnn_side.axes import MAX_NCNN_RANK, reshape_params


def materialize_constants(graph: Graph) -> dict:
    added = 0
    for name, t in list(graph.tensors.items()):
        if not t.is_constant or graph.producer(name) is not None or not graph.use_count(name):
            continue
        shape = t.ncnn_shape
        if len(shape) > MAX_NCNN_RANK:
            users = ", ".join(f"'{n.origin or n.name}'" for n in graph.consumers(name))
            raise ConversionError(f"constant '{name}' of shape {list(t.shape)} used by {users} "
                                  "has more than 4 axes, which ncnn cannot hold")
        graph.add_node(Node(graph.fresh_name(f"{name}_data"), "MemoryData", [], [name],
                            params=reshape_params(shape),
                            weights=[np.asarray(t.value, dtype=np.float32).ravel()],
                            ncnn=True, origin=name))
        added += 1
    return {"memorydata": added}
