"""Which adjacent axes of wide tensors may merge: each gap between two axes ("boundary") is
tied to boundaries of neighbouring tensors by the nodes between them (union-find), or cut
where a node needs the axes apart (Transpose, Gather/Split/Slice/Softmax along an axis,
broadcasts, MatMul's matrix axes, the batch axis). passes/merge_wide_axes.py plans with it.
"""
from __future__ import annotations

from converter.ir import Graph, Node, Tensor
from converter.op_groups import ELEMENTWISE, REDUCE
from converter.op_table import OpTable
from converter.shapes.symbolic import REFS, SLICE_TERMS

RESHAPES = {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}
# the input slots that carry data (the rest are shapes, axes, sizes: constants the rewrite replaces)
DATA_SLOTS = {"Reshape": 1, "Flatten": 1, "Squeeze": 1, "Unsqueeze": 1, "Transpose": 1, "Split": 1, "Slice": 1,
              "Softmax": 1, "Gather": 2, "MatMul": 2}
REDUCES = REDUCE
DATA_SLOTS.update(dict.fromkeys(REDUCES, 1))
DATA_SLOTS.update({"GatherND": 2, "Expand": 1})
# op -> fn(boundaries, graph, node): how the op ties or cuts its tensors' boundaries (else elementwise)
RULES = OpTable("axis-boundary rule")

Key = tuple[str, int]       # (tensor, k): the boundary between axes k and k+1


def _data_inputs(node: Node) -> list[str]:
    names = node.inputs[:DATA_SLOTS.get(node.op, len(node.inputs))]
    return [n for n in names if n and n not in node.meta.get(REFS, [])]


def _supported(node: Node) -> bool:
    return not node.ncnn and (node.op in ELEMENTWISE or node.op in DATA_SLOTS or node.op == "Concat")


class Boundaries:
    """Union-find over boundaries; a class is cut (with the node that cut it first) or merged."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.parent: dict[Key, Key] = {}
        self.why: dict[Key, Node | None] = {}      # root -> the node that cut it (None: batch axis, refs)

    def find(self, key: Key) -> Key:
        while self.parent.setdefault(key, key) != key:
            self.parent[key] = self.parent[self.parent[key]]
            key = self.parent[key]
        return key

    def _valid(self, t: str, k: int) -> bool:
        return 0 <= k < len(self.graph.tensors[t].shape) - 1

    def union(self, a: Key, b: Key) -> None:
        if not (self._valid(*a) and self._valid(*b)):
            return
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra
            if rb in self.why and ra not in self.why:
                self.why[ra] = self.why[rb]

    def cut(self, t: str, k: int, node: Node | None) -> None:
        if self._valid(t, k):
            self.why.setdefault(self.find((t, k)), node)

    def cut_around(self, t: str, axis: int, node: Node | None) -> None:
        self.cut(t, axis - 1, node)
        self.cut(t, axis, node)

    def pin(self, t: str, node: Node | None) -> None:
        for k in range(len(self.graph.tensors[t].shape) - 1):
            self.cut(t, k, node)

    def is_cut(self, t: str, k: int) -> bool:
        return self.find((t, k)) in self.why

    def groups(self, t: str) -> list[list[int]]:
        groups = [[0]]
        for k in range(len(self.graph.tensors[t].shape) - 1):
            if self.is_cut(t, k):
                groups.append([k + 1])
            else:
                groups[-1].append(k + 1)
        return groups


# ---- what each node needs ---------------------------------------------------------------------------------
def _broadcast(b: Boundaries, node: Node, operands: list[Tensor], out: Tensor, lead: int = 0,
               span: int | None = None) -> None:
    """Operands (their axes that take part) aligned numpy-style with out's axes [lead, lead+span), all
    by default: a gap can merge when each operand has there both of out's extents or two ones."""
    span = out.rank - lead if span is None else span
    for x in operands:
        pad = span - x.rank
        for k in range(span - 1):
            pair = tuple(x.shape[i] if i >= 0 else 1 for i in (k - pad, k + 1 - pad))
            want = (out.shape[lead + k], out.shape[lead + k + 1])
            same = pair == want and (None not in pair or tuple(x.shape) == tuple(out.shape[lead:lead + span]))
            if k - pad >= 0:
                b.union((x.name, k - pad), (out.name, lead + k))
            if not (same or pair == (1, 1)):
                b.cut(out.name, lead + k, node)


def _elementwise(b: Boundaries, g: Graph, node: Node) -> None:
    out = g.tensors[node.outputs[0]]
    _broadcast(b, node, [g.tensors[i] for i in _data_inputs(node)], out)


@RULES.register("Softmax")
def _softmax(b: Boundaries, g: Graph, node: Node) -> None:
    _elementwise(b, g, node)
    x = g.tensors[node.inputs[0]]
    b.cut_around(x.name, _softmax_axis(g, node, x), node)


def _softmax_axis(g: Graph, node: Node, x: Tensor) -> int:
    return node.attrs.get("axis", -1 if g.opset >= 13 else 1) % x.rank


@RULES.register("Transpose")
def _transpose(b: Boundaries, g: Graph, node: Node) -> None:
    x, out = g.tensors[node.inputs[0]], g.tensors[node.outputs[0]]
    perm = _perm(node, x)
    for i in range(out.rank - 1):
        if perm[i + 1] == perm[i] + 1:
            b.union((out.name, i), (x.name, perm[i]))
        else:
            b.cut(out.name, i, node)
    for j in range(x.rank - 1):
        if perm.index(j + 1) != perm.index(j) + 1:
            b.cut(x.name, j, node)


def _perm(node: Node, x: Tensor) -> list[int]:
    return [int(p) for p in node.attrs.get("perm") or reversed(range(x.rank))]


def _along(b: Boundaries, node: Node, x: Tensor, outs: list[Tensor], axes: list[int]) -> None:
    """Split/Slice: outputs of x's rank, the axes cut free, every other gap shared."""
    for out in outs:
        for k in range(x.rank - 1):
            b.union((x.name, k), (out.name, k))
    for a in axes:
        b.cut_around(x.name, a, node)


@RULES.register("Concat")
def _concat(b: Boundaries, g: Graph, node: Node) -> None:
    """Every input of the output's rank: the other gaps shared, the concatenated axis cut free."""
    out = g.tensors[node.outputs[0]]
    axis = node.attrs.get("axis", 0) % out.rank
    for name in filter(None, node.inputs):
        for k in range(out.rank - 1):
            b.union((name, k), (out.name, k))
    b.cut_around(out.name, axis, node)


@RULES.register("Split")
def _split(b: Boundaries, g: Graph, node: Node) -> None:
    x = g.tensors[node.inputs[0]]
    _along(b, node, x, [g.tensors[o] for o in node.outputs if o], [node.attrs.get("axis", 0) % x.rank])


@RULES.register("Slice")
def _slice(b: Boundaries, g: Graph, node: Node) -> None:
    x = g.tensors[node.inputs[0]]
    axes = _slice_axes(g, node, x)
    if axes is None:
        b.pin(x.name, node)
        axes = []
    _along(b, node, x, [g.tensors[node.outputs[0]]], axes)


def _slice_axes(g: Graph, node: Node, x: Tensor) -> list[int] | None:
    if SLICE_TERMS in node.meta:
        return list(node.meta[SLICE_TERMS]["axes"])
    if "axes" in node.attrs or "starts" in node.attrs:      # opset < 10: attributes
        axes = node.attrs.get("axes") or list(range(len(node.attrs.get("starts", []))))
    elif len(node.inputs) > 3 and node.inputs[3]:
        value = g.value(node.inputs[3])
        axes = None if value is None else value.reshape(-1).tolist()
    else:
        starts = g.value(node.inputs[1])
        axes = None if starts is None else list(range(starts.size))
    return None if axes is None else [int(a) % x.rank for a in axes]


@RULES.register("Gather")
def _gather(b: Boundaries, g: Graph, node: Node) -> None:
    """out = x[:a] + indices + x[a+1:]: the lowering picks slices along x's axis a, then reshapes them to
    the output (except for 1-D indices), so the output's axes may merge freely across the indices' ones."""
    x, idx, out = g.tensors[node.inputs[0]], g.tensors[node.inputs[1]], g.tensors[node.outputs[0]]
    a, q = node.attrs.get("axis", 0) % x.rank, idx.rank
    b.cut_around(x.name, a, node)
    for k in range(a - 1):
        b.union((x.name, k), (out.name, k))
    for k in range(q - 1):
        b.union((idx.name, k), (out.name, a + k))
    for k in range(a + 1, x.rank - 1):
        b.union((x.name, k), (out.name, k - 1 + q))
    if q == 1 or None in out.shape:     # the picked slices are the output as they are (1-D indices), or the
        b.cut(out.name, a - 1, node)    # Reshape to the output copies unknown extents in place
        b.cut(out.name, a + q - 1, node)


@RULES.register("MatMul")
def _matmul(b: Boundaries, g: Graph, node: Node) -> None:
    left, right = (g.tensors[i] for i in node.inputs[:2])
    out = g.tensors[node.outputs[0]]
    if left.rank < 2 or right.rank < 2:
        for t in (left, right, out):
            b.pin(t.name, node)
        return
    if right.rank == 2 and left.rank == out.rank:
        # a weight: the left's rows and every axis before them are just rows of one matrix product,
        # free to merge with each other (tied to the output's same gaps); only the contracted axis is apart
        b.cut(left.name, left.rank - 2, node)
        b.cut(out.name, out.rank - 2, node)
        b.pin(right.name, node)
        for k in range(left.rank - 2):
            b.union((left.name, k), (out.name, k))
        return
    for t in (left, right, out):        # the matrices' own two axes stay apart, and apart from the batch dims
        b.cut(t.name, t.rank - 2, node)
        b.cut(t.name, t.rank - 3, node)
    _broadcast(b, node, [Tensor(t.name, t.shape[:-2]) for t in (left, right)], out, 0, out.rank - 2)


def reduce_axes(g: Graph, node: Node, x: Tensor) -> list[int] | None:
    """The reduced axes (attribute, or the constant second input since opset 18 / ReduceSum 13), or None."""
    if "axes" in node.attrs:
        axes = node.attrs["axes"]
    elif len(node.inputs) > 1 and node.inputs[1]:
        value = g.value(node.inputs[1])
        if value is None:
            return None
        axes = value.reshape(-1).tolist()
    else:
        axes = [] if node.attrs.get("noop_with_empty_axes", 0) else list(range(x.rank))
    return sorted({int(a) % x.rank for a in axes})


@RULES.register(*REDUCES)
def _reduce(b: Boundaries, g: Graph, node: Node) -> None:
    """Each reduced axis alone; the gaps between kept axes shared with the output's (keepdims or not)."""
    x, out = g.tensors[node.inputs[0]], g.tensors[node.outputs[0]]
    axes = reduce_axes(g, node, x)
    if axes is None:
        for t in (x, out):
            b.pin(t.name, node)
        return
    keep = node.attrs.get("keepdims", 1)
    position = {a: (a if keep else a - sum(r < a for r in axes)) for a in range(x.rank)}
    for k in range(x.rank - 1):
        if k not in axes and k + 1 not in axes or keep:
            b.union((x.name, k), (out.name, position[k]))
    for a in axes:
        b.cut_around(x.name, a, node)


@RULES.register("GatherND")
def _gather_nd(b: Boundaries, g: Graph, node: Node) -> None:
    """out = indices.shape[:-1] + x.shape[depth:] (batch_dims 0, constant indices): the tuples' own axes
    merge with the indices' (a constant, reshaped with them), the data's axes past the tuples with the
    output's; the tuples' axes stay as they are (their positions are the tuples' coordinates)."""
    x, idx, out = g.tensors[node.inputs[0]], g.tensors[node.inputs[1]], g.tensors[node.outputs[0]]
    if node.attrs.get("batch_dims", 0) or not idx.is_constant or idx.rank < 1:
        for t in (x, idx, out):
            b.pin(t.name, node)
        return
    depth, lead = idx.shape[-1], idx.rank - 1
    for k in range(min(depth, x.rank - 1)):
        b.cut(x.name, k, node)
    for k in range(depth, x.rank - 1):
        b.union((x.name, k), (out.name, lead + k - depth))
    for k in range(lead - 1):
        b.union((idx.name, k), (out.name, k))
    b.cut(idx.name, lead - 1, node)
    b.cut(out.name, lead - 1, node)


@RULES.register("Expand")
def _expand(b: Boundaries, g: Graph, node: Node) -> None:
    """A broadcast of one operand to a known shape (the target is rewritten as the merged output's shape)."""
    out = g.tensors[node.outputs[0]]
    if None in out.shape:
        for t in (g.tensors[node.inputs[0]], out):
            b.pin(t.name, node)
        return
    _elementwise(b, g, node)


@RULES.register(*RESHAPES)
def _reshape(b: Boundaries, g: Graph, node: Node) -> None:
    """A reshape ties nothing: any grouping of its two sides is still a reshape (rewritten over the groups)."""
