"""Write each Input layer's extents (0=w 1=h 11=d 2=c), as pnnx does, where the input's ncnn shape is
fully known: ncnn's optimizer and its Vulkan pipelines read them, and a reader of the .param sees
what the file takes. An input with a dynamic extent keeps none (0 means "any"; a partial shape would
make ncnnoptimize infer wrong ones)."""
from __future__ import annotations

from converter.ir import Graph

# param ids of the extents from the innermost axis out, by the ncnn rank: w; w h; w h c; w h d c
EXTENT_IDS = {1: (0,), 2: (0, 1), 3: (0, 1, 2), 4: (0, 1, 11, 2)}


def declare_input_shapes(graph: Graph) -> dict:
    declared = 0
    for node in graph.nodes.values():
        if node.op != "Input" or not node.outputs:
            continue
        tensor = graph.tensors[node.outputs[0]]
        shape = tensor.ncnn_shape if tensor.shape is not None else None
        if not shape or not all(isinstance(d, int) and d > 0 for d in shape):
            continue
        extents = dict(zip(EXTENT_IDS[len(shape)], reversed(shape)))
        if any(node.params.get(k) != v for k, v in extents.items()):     # run twice: nothing new
            node.params.update(extents)
            declared += 1
    return {"input_shapes_declared": declared}
