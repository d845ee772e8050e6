"""An op ncnn runs on one (C, ...) blob, over a batch of known extent N > 1: once per sample.

ncnn's dynamic-weight convolutions and GridSample take one sample (no batch axis), and their
run-time weight or grid cannot be repeated into the channels as passes/merge_batch_into_channels.py
does with constant weights. A batch kept as ncnn's outer axis is cut into its samples instead:

    Crop [k:k+1] on axis 0 -> Reshape to (C, ...) -> the op's own lowering -> Reshape to
    (1, C', ...) -> Concat of the N results on axis 0

A leading 1 that is no batch axis (a 1-D signal unsqueezed to (1, L, 1)) is the case N = 1: the
Reshapes alone.

The same numbers sample by sample: copies around the op, which runs as it does at batch 1.
"""
from __future__ import annotations

from typing import Callable, Sequence

from ..ir import Graph, Node, Tensor
from .common import layer, new_tensor, reshape_to

MAX_SAMPLES = 16      # each sample is its own layers; a larger batch is refused by the op's lowering

Lowering = Callable[[Graph, Node], list[Node]]


def _kept_batch(t: Tensor) -> int | None:
    """N when the tensor's axis 0 is a known extent N that ncnn keeps as its outer axis."""
    if t.shape is None or not t.shape or t.batch_axis is not None or len(t.ncnn_shape) != t.rank:
        return None
    n = t.shape[0]
    return n if n is not None and 1 <= n <= MAX_SAMPLES and None not in t.shape[1:] else None


def per_sample(graph: Graph, node: Node, batched: Sequence[int], lower: Lowering) -> list[Node] | None:
    """`lower` run once per sample of the inputs at slots `batched` (each with the same batch N),
    or None where the batch is not such a kept, known extent (the caller then refuses)."""
    out = graph.tensors[node.outputs[0]]
    inputs = [graph.tensors[node.inputs[s]] for s in batched]
    n = _kept_batch(inputs[0])
    if n is None or any(_kept_batch(t) != n for t in (*inputs, out)) or out.rank > 4:
        return None
    layers, results = [], []
    for k in range(n):
        sample_inputs = list(node.inputs)
        for slot, t in zip(batched, inputs):
            cropped = t.name
            if n > 1:
                cropped = new_tensor(graph, f"{t.name}_{k}", (1, *t.shape[1:]), None)
                layers.append(layer(node, graph, "Crop", [t.name], [cropped], {9: [k], 10: [k + 1], 11: [0]},
                                    suffix=f"_sample{k}_in{slot}"))
            reshape, sample_inputs[slot] = reshape_to(graph, node, cropped, (1, *t.shape[1:]), 0,
                                                      suffix=f"_sample{k}_in{slot}_item")
            layers.append(reshape)
        y = new_tensor(graph, f"{out.name}_{k}", (1, *out.shape[1:]), 0)
        step = Node(f"{node.name}_sample{k}", node.op, sample_inputs, [y], dict(node.attrs),
                    origin=node.origin or node.name, meta=dict(node.meta))
        layers += lower(graph, step)
        reshape, back = reshape_to(graph, node, y, (1, *out.shape[1:]), None, suffix=f"_sample{k}_out",
                                   out=out.name if n == 1 else None)
        layers.append(reshape)
        results.append(back)
    if n > 1:
        layers.append(layer(node, graph, "Concat", results, [out.name], {0: 0}, suffix="_samples"))
    return layers


def weight_read_per_sample(graph: Graph, node: Node) -> bool:
    """A 2-D Conv with a constant weight over a kept, known batch of 2..MAX_SAMPLES: it runs as the
    dynamic-weight layer once per sample, every sample reading the one MemoryData that holds the
    weight, rather than merged into the channels with the weight repeated per sample
    (passes/merge_batch_into_channels.py leaves it). Only when asked (convert --share-weights):
    measured in real ncnn 1.2-2.5x slower than the grouped form (docs/ops.md, "The .bin against the
    model's weights")."""
    if not graph.share_weights or node.op != "Conv" or len(node.inputs) < 2:
        return False
    x, w = graph.tensors[node.inputs[0]], graph.tensors[node.inputs[1]]
    n = _kept_batch(x)
    return (n is not None and n > 1 and x.rank == 4 and x.dtype.kind == "f" and w.is_constant
            and w.rank == 4 and w.dtype.kind == "f")
