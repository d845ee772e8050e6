"""Refuse a converted graph that still has an empty blob (an extent of 0).

ncnn has no empty blobs: a MemoryData of no values fails to write, and a layer whose output
would be empty (a Resize by 0.3 of an extent of 3, a Shape slice with start > end) fails at
run time with -100. onnxruntime gives an empty tensor there; refusing names the ONNX node.
Runs after dead layers are gone, so only blobs ncnn would hold count.
"""
from __future__ import annotations

from converter.ir import ConversionError, Graph


def refuse_empty_blobs(graph: Graph) -> dict:
    for node in graph.topological():
        for name in node.outputs:
            shape = graph.tensors[name].shape if name in graph.tensors else None
            if shape is not None and 0 in shape:
                raise ConversionError(f"{node.describe()} gives '{name}' of shape {list(shape)}, which is "
                                      "empty; ncnn has no empty blobs")
    return {"empty_blobs": 0}     # a check: it refuses, never changes the graph
