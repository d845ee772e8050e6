"""Run channel-wise CNN ops over a batch ncnn cannot drop by merging the batch into the channels.

ncnn's pooling, normalization and convolution layers see one (C, ...) blob without a batch.
For an op that treats each (item, channel) plane on its own, the input [N, C, *S] with N > 1
gives the same numbers as [1, N*C, *S], which is the same memory, so a Reshape away:
  - pooling (MaxPool, AveragePool, LpPool and the Global forms): each plane alone;
  - InstanceNormalization, BatchNormalization: each plane with its channel's constants,
    repeated N times;
  - GroupNormalization: groups are runs of channels, so N*G groups, constants repeated N times;
  - Conv, ConvTranspose: groups g over N*C channels become N*g groups with the weight (and
    bias) repeated N times along the output channels, so item n's channels only meet its own
    (the weight grows N times; the alternative, a 3-D convolution with the batch as its
    depth, needs a Permute on each side and ncnn's slower Convolution3D);
  - DepthToSpace in CRD mode: each output channel comes from blocksize**2 adjacent channels
    of one item (DCR interleaves all channels, SpaceToDepth too: left alone);
  - Pad of the spatial axes only;
  - elementwise ops whose computed inputs are all merged already (a Conv's ReLU, a residual Add).
So each such op becomes

    Reshape [N, C, *S] -> [1, N*C, *S] (the new 1 is the batch), the op, Reshape -> [N, C', *S']

One walk in topological order. An op whose input is another's reshaped-back output reads the
merged tensor directly, so a chain of such ops has one Reshape at each end (and a Conv's
activation stays next to it, to be fused). A five-axis view made by a reshape (torch's LRN
views [N, C, H, W] as [N, 1, C, H, W]) is read past: the merge Reshape reads the view's input,
and a reshape of a reshaped-back output reads the merged tensor. A graph input or
output with five axes (a 3-D op over a batch, [N, C, D, H, W]), which ncnn cannot hold at all,
takes the merged shape itself: the caller feeds and reads [N*C, D, H, W] (reported as its
ncnn shape beside the ONNX one). BatchNormalization and Pad over four axes or fewer are left to
their lowerings, which take any batch there.
"""
from __future__ import annotations

import numpy as np

from converter import op_groups
from converter.ir import Graph, Node, Tensor
from converter.lowering.per_sample import weight_read_per_sample
from converter.ncnn_side.axes import MAX_NCNN_RANK

# op -> (input slots holding per-channel constants that repeat N times, attribute scaled by N)
CHANNEL_WISE = {
    "MaxPool": ((), None), "AveragePool": ((), None), "LpPool": ((), None),
    "GlobalAveragePool": ((), None), "GlobalMaxPool": ((), None), "GlobalLpPool": ((), None),
    "InstanceNormalization": ((1, 2), None),
    "BatchNormalization": ((1, 2, 3, 4), None),
    "GroupNormalization": ((1, 2), "num_groups"),
    "Conv": ((1, 2), "group"),
    "ConvTranspose": ((1, 2), "group"),
    # CRD takes each output channel from a run of blocksize**2 input channels, never across items
    "DepthToSpace": ((), None),
    # padding only the spatial axes
    "Pad": ((), None),
}
# their lowerings take any batch when it fits ncnn's 4 axes: merged only when it does not, or
# when the input is merged already
ANY_BATCH_IF_IT_FITS = {"BatchNormalization", "Pad"}
# elementwise ops: their layout is free, so they join a merged chain but never start one
ELEMENTWISE = op_groups.ELEMENTWISE | {"Dropout"}
# the same memory with other extents: a Reshape into or out of the merged shape reads past them
RESHAPES = {"Reshape", "Squeeze", "Unsqueeze", "Flatten"}
SHAPE_KEEPING = {"InstanceNormalization", "BatchNormalization", "GroupNormalization"}


def _wide(t: Tensor) -> bool:
    return t.shape is not None and len(t.ncnn_shape) > MAX_NCNN_RANK


def _sized(shape: tuple | None) -> bool:
    """Batch and channel extents known (they are multiplied); spatial ones may be run-time sizes."""
    return shape is not None and len(shape) >= 3 and None not in shape[:2]


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _joins(graph: Graph, node: Node, merged_of: dict[str, str]) -> bool:
    """An elementwise op whose computed inputs are merged and of its own shape, its constants single
    values (a Conv's ReLU, Clip's bounds, a residual Add): it runs on the merged tensors as well."""
    if node.ncnn or node.op not in ELEMENTWISE or any(node.outputs[1:]):
        return False           # (a Dropout's mask)
    y = graph.tensors[node.outputs[0]]
    computed = [i for i in node.inputs if i and graph.value(i) is None]
    constants = [i for i in node.inputs if i and graph.value(i) is not None]
    return (_sized(y.shape) and bool(computed)
            and all(i in merged_of and graph.tensors[i].shape == y.shape for i in computed)
            and all(graph.value(i).size == 1 for i in constants))


def _eligible(graph: Graph, node: Node, merged_of: dict[str, str]) -> bool:
    if node.ncnn or node.op not in CHANNEL_WISE:
        return False
    if not node.inputs or not node.inputs[0] or node.outputs[:1] != [o for o in node.outputs if o]:
        return False           # (a MaxPool's Indices output numbers positions of the whole batch)
    x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    chained = x.name in merged_of
    if x.is_constant or x.batch_axis is not None or x.dtype.kind != "f" or x.rank not in (3, 4, 5):
        return False
    y_shape = x.shape if y.shape is None and node.op in SHAPE_KEEPING else y.shape
    if not (_sized(x.shape) and _sized(y_shape)) or len(y_shape) != x.rank or y_shape[0] != x.shape[0]:
        return False
    if node.op in ANY_BATCH_IF_IT_FITS and not (_wide(x) or chained):
        return False
    if node.op == "Pad" and not _pads_spatial_only(graph, node, x.rank):
        return False
    if node.op == "Conv" and x.rank == 3:
        return False           # passes/convert_batched_conv1d.py runs those without repeating weights
    if weight_read_per_sample(graph, node):
        return False           # its lowering reads the weight once, sample by sample
    if node.op == "DepthToSpace" and _text(node.attrs.get("mode", "DCR")) != "CRD":
        return False
    slots, _ = CHANNEL_WISE.get(node.op, ((), None))
    return all(graph.value(node.inputs[s]) is not None for s in slots if s < len(node.inputs) and node.inputs[s])


def _pads_spatial_only(graph: Graph, node: Node, rank: int) -> bool:
    pads = node.attrs.get("pads")
    if pads is None:
        value = graph.value(node.inputs[1]) if len(node.inputs) > 1 and node.inputs[1] else None
        if value is None or (len(node.inputs) > 3 and node.inputs[3]):
            return False       # (pads for some axes only: rare, left to the lowering)
        pads = value.reshape(-1).tolist()
    return len(pads) == 2 * rank and not any(pads[a] or pads[a + rank] for a in (0, 1))


def _merged(shape: tuple) -> tuple:
    return (1, shape[0] * shape[1], *shape[2:])


def _reshape(graph: Graph, src: Node, x: str, out: str, shape: tuple, suffix: str) -> Node:
    """An ONNX Reshape to `shape`; a run-time spatial extent is Reshape's 0 (copy the input's at
    that index), the same axis on both sides."""
    target = [0 if d is None else d for d in shape]
    target = graph.add_constant(f"{src.name}{suffix}_shape", np.array(target, np.int64)).name
    node = Node(graph.fresh_name(f"{src.name}{suffix}"), "Reshape", [x, target], [out])
    node.origin = src.origin or src.name
    return graph.add_node(node)


class _Merger:
    def __init__(self, graph: Graph):
        self.graph = graph
        self.merged_of: dict[str, str] = {}     # a reshaped-back output -> the merged tensor it came from
        self.unmerges: list[Node] = []
        self.merges: set[str] = set()           # names of the Reshapes into the merged shape
        self.bypassed: list[Node] = []          # reshapes to five axes that a merge reads past
        self.repeated_bytes = 0                 # what repeating constants per sample adds to the .bin

    def _source(self, x: Tensor) -> str:
        """What the merge Reshape reads: x, or, when x has five axes (which ncnn cannot hold) and
        comes from a reshape, that reshape's input (a Reshape of a Reshape is one Reshape)."""
        producer = self.graph.producer(x.name)
        if not _wide(x) or producer is None or producer.op not in RESHAPES or producer.ncnn or None in x.shape:
            return x.name      # (a run-time extent is copied by index, which only x's own axes keep)
        self.bypassed.append(producer)
        return self.merged_of.get(producer.inputs[0], producer.inputs[0])

    def merged_input(self, node: Node) -> str:
        graph = self.graph
        x = graph.tensors[node.inputs[0]]
        if x.name in self.merged_of:
            return self.merged_of[x.name]
        name = graph.fresh_name(f"{x.name}_merged")
        graph.add_tensor(Tensor(name, _merged(x.shape), x.dtype, batch_axis=0))
        self.merges.add(_reshape(graph, node, self._source(x), name, _merged(x.shape), "_merge_batch").name)
        return name

    def reshape_merged(self, node: Node) -> None:
        """A reshape of a five-axis reshaped-back output reshapes the merged tensor instead."""
        y = self.graph.tensors[node.outputs[0]]
        self.graph.remove_node(node)
        _reshape(self.graph, node, self.merged_of[node.inputs[0]], y.name, y.shape, "")

    def rewrite(self, node: Node) -> None:
        """A channel-wise op on the merged input, its constants repeated N times."""
        graph = self.graph
        slots, scaled = CHANNEL_WISE.get(node.op, ((), None))
        x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
        if y.shape is None:
            y.shape = x.shape      # (onnx's inference leaves GroupNormalization's unknown)
        n = x.shape[0]
        inputs = [self.merged_input(node), *node.inputs[1:]]
        for s in slots:
            if s < len(inputs) and inputs[s]:
                value = graph.value(inputs[s])
                self.repeated_bytes += (n - 1) * value.size * 4
                inputs[s] = graph.add_constant(f"{inputs[s]}_x{n}", np.tile(value, (n,) + (1,) * (value.ndim - 1))).name
        attrs = dict(node.attrs)
        if scaled:
            attrs[scaled] = int(attrs.get(scaled, 1)) * n
        self._replace(node, inputs, attrs)

    def join(self, node: Node) -> None:
        """An elementwise op whose computed inputs are all merged: the same op on the merged tensors."""
        self._replace(node, [self.merged_of.get(i, i) for i in node.inputs], dict(node.attrs))

    def _replace(self, node: Node, inputs: list[str], attrs: dict) -> None:
        graph = self.graph
        y = graph.tensors[node.outputs[0]]
        graph.remove_node(node)
        if y.name in graph.outputs and _wide(y) and not graph.consumers(y.name):
            y.onnx_shape, y.onnx_batch_axis = y.shape, y.batch_axis
            y.shape, y.batch_axis = _merged(y.shape), 0
            graph.add_node(Node(node.name, node.op, inputs, [y.name], attrs, origin=node.origin, meta=dict(node.meta)))
            self.merged_of[y.name] = y.name
            return
        out = graph.fresh_name(f"{y.name}_merged")
        graph.add_tensor(Tensor(out, _merged(y.shape), y.dtype, batch_axis=0))
        graph.add_node(Node(node.name, node.op, inputs, [out], attrs, origin=node.origin, meta=dict(node.meta)))
        self.unmerges.append(_reshape(graph, node, out, y.name, y.shape, "_unmerge_batch"))
        self.merged_of[y.name] = out

    def finish(self) -> None:
        """Drop reshapes-back that only a merged reader read; wide graph inputs take the merged shape."""
        graph = self.graph
        for node in self.unmerges + self.bypassed:
            if node.name in graph.nodes and not graph.use_count(node.outputs[0]):
                graph.remove_node(node)
        for name in graph.inputs:
            t = graph.tensors[name]
            readers = graph.consumers(name)
            if not _wide(t) or not readers or not all(r.name in self.merges for r in readers):
                continue
            t.onnx_shape, t.onnx_batch_axis = t.shape, t.batch_axis
            t.shape, t.batch_axis = _merged(t.shape), 0
            for reader in readers:
                merged = reader.outputs[0]
                graph.remove_node(reader)
                graph.replace_all_uses(merged, name)


def _reshapes_merged(graph: Graph, node: Node, merged_of: dict[str, str]) -> bool:
    if node.op not in RESHAPES or node.ncnn or not node.inputs or node.inputs[0] not in merged_of:
        return False
    y = graph.tensors[node.outputs[0]]
    return _wide(graph.tensors[node.inputs[0]]) and y.shape is not None and None not in y.shape


def merge_batch_into_channels(graph: Graph) -> dict:
    merger = _Merger(graph)
    rewritten = 0
    for node in graph.topological():      # a node's input is settled (merged or not) before it is seen
        if _eligible(graph, node, merger.merged_of):
            merger.rewrite(node)
            rewritten += 1
        elif _joins(graph, node, merger.merged_of):
            merger.join(node)
            rewritten += 1
        elif _reshapes_merged(graph, node, merger.merged_of):
            merger.reshape_merged(node)
    if rewritten:
        merger.finish()
        graph.remove_unused_tensors()
    return {"batch_merged_into_channels": rewritten, "batch_repeated_weight_bytes": merger.repeated_bytes}
