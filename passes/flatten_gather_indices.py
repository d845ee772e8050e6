"""Give a constant-index Gather read only by Reshapes one flat list of indices.

torch.jit exports of Hugging Face masks gather the flattened mask (8, 1) at indices shaped
(1, 1, 1, 8), making a (1, 1, 1, 8, 1) tensor that ncnn cannot hold, and reshape it straight
to (8,). Gather's result lists the picked slices in the indices' C order, so gathering at
indices.ravel() gives the same elements in the same order, shaped data[:axis] + (n,) +
data[axis+1:]; a Reshape to a constant target (no copy codes) reads them the same. The data's
axes keep their places, so the batch axis stays where the data has it. One walk over Gathers.
"""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node
from converter.shapes.symbolic import SHAPE_TERMS


def _reads_only_elements(graph: Graph, reader: Node) -> bool:
    """A Reshape whose target does not copy extents from its input's shape."""
    if reader.op != "Reshape" or reader.ncnn or SHAPE_TERMS in reader.meta or len(reader.inputs) < 2:
        return False
    target = graph.value(reader.inputs[1])
    return target is not None and (reader.attrs.get("allowzero", 0) or not np.any(target == 0))


def flatten_gather_indices(graph: Graph) -> dict:
    flattened = 0
    for gather in [n for n in graph.topological() if n.op == "Gather" and not n.ncnn]:
        data, out = graph.tensors[gather.inputs[0]], graph.tensors[gather.outputs[0]]
        indices = graph.value(gather.inputs[1])
        if indices is None or indices.ndim < 2 or data.shape is None or out.name in graph.outputs:
            continue
        readers = graph.consumers(out.name)
        if not readers or not all(_reads_only_elements(graph, r) and r.inputs[0] == out.name for r in readers):
            continue
        axis = int(gather.attrs["axis"]) % data.rank
        flat = graph.add_constant(f"{gather.inputs[1]}_flat", indices.reshape(-1))
        graph.replace_input(gather, 1, flat.name)
        out.shape = (*data.shape[:axis], indices.size, *data.shape[axis + 1:])
        out.batch_axis = data.batch_axis if data.batch_axis != axis else None
        flattened += 1
    return {"gather_indices_flattened": flattened}
