"""Give each constant tensor still consumed by an ncnn layer a MemoryData layer.

Constants absorbed as weights (Conv kernels, ...) are no longer consumed and
get nothing. Runs after the broadcast pass so MemoryData holds the final
(reshaped) dims. Equal constants (the same ncnn dims and float32 bytes: the
fills of ones each lowering of Range or ConstantOfShape writes) share one
MemoryData, whose readers insert_split fans out: a smaller .bin, and one that
does not depend on how many such fills a graph has (a decoder step's prompt
file, with fewer of them, reads its step's .bin: converter/batch_convert.py).
ncnn packs a constant for each layer reading it either way.
"""
from __future__ import annotations

import hashlib

import numpy as np

from converter.ir import ConversionError, Graph, Node
from converter.ncnn_side.axes import MAX_NCNN_RANK, reshape_params


def materialize_constants(graph: Graph) -> dict:
    added = shared = 0
    written: dict[tuple, str] = {}          # (ncnn dims, digest of the float32 bytes) -> tensor
    for name, t in list(graph.tensors.items()):
        if not t.is_constant or graph.producer(name) is not None or not graph.use_count(name):
            continue
        shape = t.ncnn_shape
        if len(shape) > MAX_NCNN_RANK:
            users = ", ".join(f"'{n.origin or n.name}'" for n in graph.consumers(name))
            raise ConversionError(f"constant '{name}' of shape {list(t.shape)} used by {users} "
                                  "has more than 4 axes, which ncnn cannot hold")
        data = np.ascontiguousarray(t.value, dtype=np.float32).ravel()
        key = (tuple(shape), hashlib.blake2b(data.tobytes(), digest_size=16).digest())
        if key in written and name not in graph.outputs:
            graph.replace_all_uses(name, written[key])
            shared += 1
            continue
        written.setdefault(key, name)
        graph.add_node(Node(graph.fresh_name(f"{name}_data"), "MemoryData", [], [name],
                            params=reshape_params(shape), weights=[data], ncnn=True, origin=name))
        added += 1
    return {"memorydata": added, "constants_shared": shared}
