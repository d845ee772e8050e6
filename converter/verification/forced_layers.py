"""verify's per-layer check of a quantized model: every layer fed onnxruntime's values of its inputs.

End to end, a quantized model's tensors drift by whole steps wherever one rounding in the chain went
the other way (in ncnn and in onnxruntime alike), and such a step grows through later layers, so an
end-to-end comparison cannot tell a right file from a wrong one. Here each blob that carries an ONNX
tensor's name is read by its consumers as onnxruntime's value (a `<blob>_onnxref` Input in a copy of
the graph), so each layer's output shows only its own error: right within one step of its quantizer
(converter/verification/quantization_steps.py), while a wrong scale or weight moves nearly every value.
"""
from __future__ import annotations

from dataclasses import replace

from converter.ir import Graph, Node

SUFFIX = "_onnxref"


def forced_model(model, reference: dict) -> tuple[object, dict[str, str]]:
    """A copy of the NcnnModel whose layers read onnxruntime's values of the named blobs; returns it and
    {fed blob: ONNX tensor} for the feeds."""
    graph = model.graph
    order = graph.topological()
    forced = {b for n in order if n.op != "Input" for b in n.outputs
              if b in reference and graph.consumers(b) and _known(graph, b)}
    copy = Graph(graph.name)
    copy.opset, copy.outputs = graph.opset, list(graph.outputs)
    for t in graph.tensors.values():
        copy.add_tensor(replace(t))
    refs = {}
    for b in sorted(forced):
        refs[b + SUFFIX] = b
        copy.add_tensor(replace(graph.tensors[b], name=b + SUFFIX))
        copy.add_node(Node(copy.fresh_name(f"{b}{SUFFIX}_input"), "Input", [], [b + SUFFIX], ncnn=True, origin=b))
    for node in order:
        copy.add_node(replace(node, inputs=[i + SUFFIX if i in forced else i for i in node.inputs]))
    copy.inputs = [*graph.inputs, *refs]
    return type(model)(copy, dict(model.stats)), refs     # an NcnnModel (api is a floor above)


def _known(graph: Graph, blob: str) -> bool:
    """onnxruntime's value fits the blob by dropping the batch axis: one whose axes were merged to fit
    ncnn is left computed, and so is a 4-D one (the real ncnn took a fed [c, 1, h, w] as another
    shape: a Reshape after it came out with a quarter of the channels)."""
    t = graph.tensors[blob]
    return t.shape is not None and t.onnx_shape is None and len(t.ncnn_shape) <= 3
