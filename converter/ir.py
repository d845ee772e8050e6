"""The one graph IR used from ONNX loading to ncnn writing.

A Graph holds tensors (ONNX shape, dtype, optional constant value, batch axis)
and nodes (ordered inputs/outputs, attributes; ncnn nodes also carry params
by id and weights). Wiring lives in a networkx MultiDiGraph (one edge per
consumed input slot, so `Mul(x, x)` has two edges) plus producer/consumer
indexes; passes change it only through the helpers here.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Iterator

import networkx as nx
import numpy as np

Dim = int | None          # None: unknown (dynamic) extent
Shape = tuple[Dim, ...]


class ConversionError(Exception):
    """A model that cannot be converted exactly; the message is one line for the user."""


@dataclass
class Tensor:
    name: str
    shape: Shape | None               # ONNX shape; None when even the rank is unknown
    dtype: np.dtype = np.dtype(np.float32)
    value: np.ndarray | None = None   # set for constants
    batch_axis: int | None = None     # ONNX axis that ncnn does not have
    # a graph input/output whose axes were merged to fit ncnn keeps its ONNX shape and batch axis here
    onnx_shape: Shape | None = None
    onnx_batch_axis: int | None = None
    # a graph input whose layout change moved onto it (passes/move_input_layout.py): ncnn's input, batch
    # axis included, is the ONNX array transposed by these axes (onnx_shape keeps the ONNX shape)
    onnx_perm: tuple[int, ...] | None = None

    @property
    def is_constant(self) -> bool:
        return self.value is not None

    @property
    def rank(self) -> int | None:
        return None if self.shape is None else len(self.shape)

    @property
    def ncnn_shape(self) -> Shape | None:
        """The ONNX shape without the batch axis, in numpy order (c, d, h, w).

        ncnn has no 0-d Mat: a scalar is the 1-D Mat [1].
        """
        if self.shape is None:
            return None
        return tuple(d for i, d in enumerate(self.shape) if i != self.batch_axis) or (1,)

    def ncnn_axis(self, onnx_axis: int) -> int | None:
        """Map an ONNX axis (negative allowed) to the ncnn (numpy-order) axis; None for the batch axis."""
        axis = onnx_axis + self.rank if onnx_axis < 0 else onnx_axis
        if axis == self.batch_axis:
            return None
        return axis - (1 if self.batch_axis is not None and axis > self.batch_axis else 0)


@dataclass
class Node:
    name: str
    op: str                            # ONNX op type, or ncnn layer type once lowered
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any] = field(default_factory=dict)   # ONNX attributes
    params: dict[int, Any] = field(default_factory=dict)  # ncnn params by id
    weights: list[np.ndarray] = field(default_factory=list)  # ncnn weights in .bin order
    ncnn: bool = False                 # True once this is an ncnn layer
    origin: str | None = None          # the ONNX node this came from, for messages
    meta: dict[str, Any] = field(default_factory=dict)    # what passes leave for later passes (terms...)

    def describe(self) -> str:
        return f"{self.op} node '{self.origin or self.name}'"


class Graph:
    def __init__(self, name: str = "graph"):
        self.name = name
        self.tensors: dict[str, Tensor] = {}
        self.nodes: dict[str, Node] = {}
        self.inputs: list[str] = []     # graph input tensor names, in order
        self.outputs: list[str] = []    # graph output tensor names, in order
        self.wiring = nx.MultiDiGraph()
        self._producer: dict[str, str] = {}
        self._consumers: dict[str, list[str]] = {}
        self._order = itertools.count()
        self._fresh = itertools.count()
        self._version = 0                        # bumped by every wiring change
        self._topo_cache: tuple[int, list[Node]] | None = None
        self.opset = 13
        self.warnings: list[str] = []    # one line each, for the user (e.g. checker complaints)
        self.notes: list[str] = []       # one line each: a choice the user made or may make (not a problem)
        # quantized models (passes/plan_int8.py): ONNX node -> its int8 plan, or why it runs in float
        self.int8_plans: dict[str, Any] = {}
        self.int8_fallbacks: dict[str, str] = {}
        # "exact" (activation Q/DQ pairs emulated, onnxruntime's bits) or "fast" (ncnn's own int8
        # placement: pairs that feed no int8 layer dropped; passes/drop_activation_qdq.py); the
        # activation pairs fast mode dropped, ONNX QuantizeLinear -> the tensor it quantized
        self.int8_mode = "exact"
        self.int8_dropped: dict[str, str] = {}
        # weight-only block-quantized MatMul (MatMulNBits): one of BLOCK_QUANT_MODES in
        # converter/lowering/genai_matmulnbits.py ("int8", "dequantize" or "keep")
        self.block_quant = "int8"
        # blob -> (ONNX tensor, low, high): a blob that passes made the ONNX tensor clipped (a Relu or a
        # quantizer's clip moved into the producer); verify compares it with onnxruntime's value so clipped
        self.reference_clips: dict[str, tuple[str, float, float]] = {}
        # (graph input, axis) -> the dim_param naming its run-time extent: ONNX says equal names are
        # equal sizes (a BERT's input_ids and attention_mask share "seq")
        self.dim_names: dict[tuple[str, int], str] = {}
        # convert --share-weights: a weight repeated for a batch is read once, at some speed cost
        # (converter/lowering/per_sample.py weight_read_per_sample)
        self.share_weights = False
        # convert --nchw-input: channels-last inputs to take channels-first (passes/move_input_layout.py)
        self.nchw_inputs: set[str] = set()
        # the ncnn release the files are written for (--target-ncnn; None: the newest known)
        self.ncnn_target: int | None = None
        # what lowerings keep per graph for each other (e.g. one cos/sin or mask blob that every
        # attention layer reads), as Node.meta holds what passes leave per node
        self.meta: dict[str, Any] = {}

    # ---- tensors -------------------------------------------------------
    def add_tensor(self, tensor: Tensor) -> Tensor:
        self.tensors[tensor.name] = tensor
        return tensor

    @property
    def version(self) -> int:
        """Bumped by every wiring change: caches keyed on it follow graph rewrites."""
        return self._version

    def fresh_name(self, stem: str) -> str:
        while True:
            name = f"{stem}_{next(self._fresh)}"
            if name not in self.tensors and name not in self.nodes:
                return name

    def add_constant(self, stem: str, value: np.ndarray) -> Tensor:
        value = np.asarray(value)
        return self.add_tensor(Tensor(self.fresh_name(stem), tuple(value.shape), value.dtype, value))

    def producer(self, tensor: str) -> Node | None:
        name = self._producer.get(tensor)
        return None if name is None else self.nodes[name]

    def consumers(self, tensor: str) -> list[Node]:
        """Consuming nodes, one entry per consumed input slot."""
        return [self.nodes[n] for n in self._consumers.get(tensor, [])]

    def use_count(self, tensor: str) -> int:
        return len(self._consumers.get(tensor, [])) + self.outputs.count(tensor)

    # ---- nodes ---------------------------------------------------------
    def add_node(self, node: Node) -> Node:
        if node.name in self.nodes:
            raise ValueError(f"duplicate node name {node.name!r}")
        self.nodes[node.name] = node
        self._version += 1
        self.wiring.add_node(node.name, order=next(self._order))
        for out in filter(None, node.outputs):
            self._producer[out] = node.name
            for consumer in set(self._consumers.get(out, [])):
                for slot in self._slots(self.nodes[consumer], out):
                    self.wiring.add_edge(node.name, consumer, key=(out, slot))
        for slot, inp in enumerate(node.inputs):
            self._link(inp, node, slot)
        return node

    def _slots(self, node: Node, tensor: str) -> list[int]:
        return [i for i, t in enumerate(node.inputs) if t == tensor]

    def _link(self, tensor: str, node: Node, slot: int) -> None:
        self._version += 1
        if not tensor:      # an omitted optional ONNX input
            return
        self._consumers.setdefault(tensor, []).append(node.name)
        src = self._producer.get(tensor)
        if src is not None:
            self.wiring.add_edge(src, node.name, key=(tensor, slot))

    def _unlink(self, tensor: str, node: Node, slot: int) -> None:
        self._version += 1
        if not tensor:
            return
        self._consumers[tensor].remove(node.name)
        src = self._producer.get(tensor)
        if src is not None:
            self.wiring.remove_edge(src, node.name, key=(tensor, slot))

    def remove_node(self, node: Node) -> None:
        for slot, inp in enumerate(node.inputs):
            self._unlink(inp, node, slot)
        for out in node.outputs:
            if self._producer.get(out) == node.name:
                del self._producer[out]
        self.wiring.remove_node(node.name)
        del self.nodes[node.name]
        self._version += 1

    def fold_into_producer(self, producer: Node, consumer: Node, **changes) -> Node:
        """Replace `consumer` and its `producer` by one node: the producer (same name) with
        `changes`, writing the consumer's outputs unless `changes` says otherwise."""
        self.remove_node(consumer)
        self.remove_node(producer)
        fields = {"inputs": list(producer.inputs), "outputs": list(consumer.outputs), **changes}
        return self.add_node(replace(producer, **fields))

    def onnx_nodes_of(self, op: str) -> Iterator[Node]:
        """The ONNX (not yet lowered) nodes of type `op` in topological order, each skipped once an
        earlier rewrite in the same walk has removed it."""
        for node in self.topological():
            if node.op == op and not node.ncnn and node.name in self.nodes:
                yield node

    def replace_nodes(self, old: Iterable[Node], new: Iterable[Node]) -> None:
        """Remove the `old` nodes, then add the `new` ones (which may reuse the old names and tensors)."""
        for node in list(old):
            self.remove_node(node)
        for node in new:
            self.add_node(node)

    def rename_output(self, node: Node, old: str, new: str) -> None:
        """Make `node` write tensor `new` where it wrote `old` (its readers are the caller's to move)."""
        self.remove_node(node)
        node.outputs = [new if o == old else o for o in node.outputs]
        self.add_node(node)

    def replace_input(self, node: Node, slot: int, tensor: str) -> None:
        self._unlink(node.inputs[slot], node, slot)
        node.inputs[slot] = tensor
        self._link(tensor, node, slot)

    def set_inputs(self, node: Node, inputs: list[str]) -> None:
        for slot, inp in enumerate(node.inputs):
            self._unlink(inp, node, slot)
        node.inputs = list(inputs)
        for slot, inp in enumerate(node.inputs):
            self._link(inp, node, slot)

    def replace_all_uses(self, old: str, new: str) -> None:
        """Point every consumer (and graph output) of tensor `old` at `new`."""
        for node in {n.name: n for n in self.consumers(old)}.values():
            for slot in self._slots(node, old):
                self.replace_input(node, slot, new)
        self.outputs = [new if o == old else o for o in self.outputs]

    def insert_before(self, consumer: Node, slot: int, node: Node) -> Node:
        """Add `node` (whose single output is new) between input `slot` of `consumer` and its producer."""
        self.add_node(node)
        self.replace_input(consumer, slot, node.outputs[0])
        return node

    def clip_reference(self, blob: str, source: str, low: float, high: float) -> None:
        """Record that `blob` holds ONNX tensor `source` (itself recorded as clipped, maybe) clipped to
        [low, high]."""
        source, was_low, was_high = self.reference_clips.get(source, (source, -np.inf, np.inf))
        self.reference_clips[blob] = (source, max(low, was_low), min(high, was_high))

    def remove_unused_tensors(self) -> None:
        live = set(self.inputs) | set(self.outputs) | set(self._producer) | {
            t for t, users in self._consumers.items() if users}
        for name in [t for t in self.tensors if t not in live]:
            del self.tensors[name]

    def topological(self) -> list[Node]:
        """Nodes in dependency order, ties broken by insertion order (stable output); cached until the wiring changes."""
        if self._topo_cache is None or self._topo_cache[0] != self._version:
            order = nx.get_node_attributes(self.wiring, "order")
            names = nx.lexicographical_topological_sort(self.wiring, key=order.__getitem__)
            self._topo_cache = (self._version, [self.nodes[n] for n in names])
        return list(self._topo_cache[1])

    def value(self, tensor: str) -> np.ndarray | None:
        t = self.tensors.get(tensor)
        return None if t is None else t.value

    def __iter__(self) -> Iterable[Node]:
        return iter(list(self.nodes.values()))
