"""Inline every If whose condition is a constant; refuse the control flow ncnn cannot run.

After constant folding, an If's condition is a constant when it depends only on
static shapes and fixed input values (`--input-value`). Its chosen branch's
nodes are spliced into the graph: names the branch defines are made unique,
names it reads from the enclosing scopes are resolved, and the If's outputs
become the branch's. The spliced nodes and everything downstream of them are
then visited once, in order: each is folded if its inputs are now constants,
else its output shapes are inferred again (onnx's per-node inference, with
constant inputs as data) and its batch axis re-derived. Nested Ifs are inlined
when the walk reaches them.

An If whose condition is known only at run time (a wake-word model verifying
only above a threshold) has both branches spliced in and each output chosen by
Where(cond, then, else): every ONNX op but the loops is a pure function, so
computing both and selecting gives the If's result, provided both branches give
the same shape (checked once the walk has inferred them). The selection is
arithmetic (c * then + (1 - c) * else, lowering/logic.py), so the branch not
taken must stay finite: a branch reading a constant that holds inf or NaN is
refused, and one that makes inf from finite values (x / 0 where the condition
guards it) computes NaN; verify shows it. Loop, Scan and Ifs whose branches
hold them are refused, all named in one error.

The same walk re-infers every node whose output shape is still incomplete,
now that folding has made more inputs constants: a size a nested If reads
may only be known once its enclosing branch is spliced in.

The graph's insertion order is ONNX's node order, which respects a branch's
implicit reads of outer tensors, so the topological walk reaches an If after
every tensor its branches read.
"""
from __future__ import annotations

from collections import deque

import numpy as np
import onnx

from converter.ir import Graph, Node, Tensor
from converter.rewrite.fold import CONTROL_FLOW, fold_node
from converter.rewrite.subgraphs import incomplete_shapes, refine_shapes, splice_subgraph
from converter.onnx_side.cut import CutRefusal


def inline_if(graph: Graph) -> dict:
    if not any(n.op in CONTROL_FLOW for n in graph.nodes.values() if not n.ncnn):
        return {}
    scopes: dict[str, dict[str, str]] = {}     # inlined node -> names its subgraphs resolve
    changed: set[str] = set()                 # tensors whose value, shape or batch axis changed
    failures: dict[str, str] = {}
    refused: list[str] = []
    refused_outputs: list[str] = []         # what a host tail would compute instead
    inlined, selects = 0, []
    work = deque(graph.topological())
    while work:
        node = work.popleft()
        if node.name not in graph.nodes or node.ncnn:
            continue
        if node.op == "If" and graph.value(node.inputs[0]) is not None:
            spliced = _inline(graph, node, scopes.pop(node.name, {}), scopes)
            work.extendleft(reversed(spliced))
            changed.update(node.outputs)
            inlined += 1
        elif node.op == "If" and not any(_sources(graph, node.inputs[0])[1:]) \
                and not any(_loops(node.attrs[b]) for b in ("then_branch", "else_branch")):
            # (a condition on run-time sizes has no ncnn form itself: refused below, naming the input)
            why = _why_refused(graph, node)
            spliced, pairs = _select(graph, node, scopes.pop(node.name, {}), scopes)
            selects.append((why, pairs, {n.name for n in spliced if n.op != "Where"}))
            work.extendleft(reversed(spliced))
            changed.update(node.outputs)
            inlined += 1
        elif node.op in CONTROL_FLOW:
            refused.append(_why_refused(graph, node))
            refused_outputs += node.outputs
        elif node.name in scopes or changed.intersection(node.inputs) or incomplete_shapes(graph, node):
            scopes.pop(node.name, None)
            outputs = list(node.outputs)
            if fold_node(graph, node, failures) or refine_shapes(graph, node):
                changed.update(outputs)
    refused += _unequal_branches(graph, selects)
    refused += _non_finite_branches(graph, selects)
    if refused:
        raise CutRefusal("control flow ncnn cannot run, nothing written: " + "; ".join(refused),
                         refused_outputs + [o for _, pairs, _ in selects for pair in pairs for o in pair])
    return {"ifs_inlined": inlined, "fold_failures_after_inlining": failures}


def _loops(branch: onnx.GraphProto) -> bool:
    """The branch holds a Loop or Scan, at any depth."""
    for proto in branch.node:
        if proto.op_type in ("Loop", "Scan"):
            return True
        if any(a.type == onnx.AttributeProto.GRAPH and _loops(a.g) for a in proto.attribute):
            return True
    return False


def _unequal_branches(graph: Graph, selects: list) -> list[str]:
    refused = []
    for why, pairs, _ in selects:
        for then, else_ in pairs:
            a, b = graph.tensors[then].shape, graph.tensors[else_].shape
            if a is None or a != b:
                refused.append(f"{why[:-1]}; computing both branches and selecting needs equal shapes, "
                               f"got {a and list(a)} and {b and list(b)})")
                break
    return refused


def _non_finite_branches(graph: Graph, selects: list) -> list[str]:
    """Selecting multiplies the branch not taken by 0: a branch node reading an inf or NaN
    constant would turn the result into NaN whichever branch is taken."""
    refused = []
    for why, _, names in selects:
        bad = next(((n, i) for n in sorted(names) if n in graph.nodes for i in graph.nodes[n].inputs
                    if i and _non_finite(graph.value(i))), None)
        if bad is not None:
            refused.append(f"{why[:-1]}; computing both branches and selecting needs finite branch values, "
                           f"but node '{bad[0]}' reads constant '{bad[1]}', which holds inf or NaN)")
    return refused


def _non_finite(value) -> bool:
    return value is not None and value.dtype.kind == "f" and not np.all(np.isfinite(value))


def _why_refused(graph: Graph, node: Node) -> str:
    if node.op != "If":
        return f"{node.op} node '{node.name}' (loops are not supported)"
    cond = node.inputs[0]
    values, sizes, data = _sources(graph, cond)
    if data:        # how many boxes pass a threshold: no --input-shape or --input-value fixes that
        counted = ", ".join(f"{n.op} node '{n.name}'" for n in data[:2]) + (
            f" and {len(data) - 2} more" if len(data) > 2 else "")
        source = f" from the values of input(s) {', '.join(values)}" if values else ""
        return (f"If node '{node.name}' (its condition '{cond}' depends on data: on how many results {counted} "
                f"give{'s' if len(data) == 1 else ''}, counted at run time{source}, which no --input-shape or "
                f"--input-value fixes)")
    hints = []
    if values:
        # fixing a value helps for a setting (a sample rate, a flag), not for data such as an image
        settings = [s for s in values if _small(graph.tensors[s])]
        hints.append(f"the value of input(s) {', '.join(values)}" + (
            ": fix it with " + " ".join(f"--input-value {s}=VALUE" for s in settings) if settings else ""))
    if sizes:
        hints.append(f"the size of input(s) {', '.join(sizes)}: fix it with "
                     + " ".join(f"--input-shape {s}=DIMS" for s in sizes))
    why = f"depends on {' and on '.join(hints)}" if hints else "is computed at run time"
    return f"If node '{node.name}' (its condition '{cond}' {why})"


def _small(t: Tensor) -> bool:
    """A setting-like input (a scalar, a few numbers), not data."""
    return t.shape is not None and None not in t.shape and int(np.prod(t.shape)) <= 4


# ops whose output's size is a count of values (boxes over a threshold, distinct values): a size read
# through them depends on data, which no input shape or value fixes
DATA_SIZED = ("NonZero", "NonMaxSuppression", "Compress", "Unique")


def _input_sources(graph: Graph, name: str) -> tuple[list[str], list[str]]:
    """The graph inputs whose values, and those whose sizes (read through Shape/Size), `name` needs."""
    values, sizes, _ = _sources(graph, name)
    return values, sizes


def _sources(graph: Graph, name: str) -> tuple[list[str], list[str], list[Node]]:
    """_input_sources, and the nodes whose output sizes count values (DATA_SIZED) on the way."""
    values, sizes, data, seen = set(), set(), {}, set()
    stack = [(name, False)]
    while stack:
        tensor, size_only = stack.pop()
        if (tensor, size_only) in seen:
            continue
        seen.add((tensor, size_only))
        if tensor in graph.inputs:
            (sizes if size_only else values).add(tensor)
        producer = graph.producer(tensor)
        if producer is not None:
            if size_only and producer.op in DATA_SIZED:       # its size is a count of its input's values
                data[producer.name] = producer
                stack.extend((i, False) for i in producer.inputs if i)
                continue
            through_size = size_only or producer.op in ("Shape", "Size")
            stack.extend((i, through_size) for i in producer.inputs if i)
    return sorted(values), sorted(sizes), [data[k] for k in sorted(data)]


# ---- splicing a branch ---------------------------------------------------------

def _inline(graph: Graph, node: Node, outer: dict[str, str], scopes: dict) -> list[Node]:
    """Replace If `node` by its chosen branch's nodes; returns them in branch order."""
    branch: onnx.GraphProto = node.attrs["then_branch" if bool(np.asarray(graph.value(node.inputs[0])).reshape(-1)[0])
                                         else "else_branch"]
    graph.remove_node(node)
    return splice_subgraph(graph, node, branch, outer, scopes, node.outputs)


def _select(graph: Graph, node: Node, outer: dict[str, str], scopes: dict) -> tuple[list[Node], list]:
    """Replace If `node` by both branches and a Where per output; returns the new nodes and the
    (then, else) tensor pairs whose shapes must agree."""
    graph.remove_node(node)
    spliced, outputs = [], {}
    for key in ("then_branch", "else_branch"):
        targets = []
        for out in node.outputs:
            name = graph.fresh_name(f"{out or node.name}_{key[:4]}")
            graph.add_tensor(Tensor(name, None, graph.tensors[out].dtype if out in graph.tensors else np.dtype(np.float32)))
            targets.append(name)
        outputs[key] = targets
        spliced += splice_subgraph(graph, node, node.attrs[key], outer, scopes, targets)
    pairs = []
    for out, then, else_ in zip(node.outputs, outputs["then_branch"], outputs["else_branch"]):
        if out:
            spliced.append(graph.add_node(Node(graph.fresh_name(f"{node.name}_select"), "Where",
                                               [node.inputs[0], then, else_], [out], origin=node.name)))
            pairs.append((then, else_))
    return spliced, pairs


# ---- shapes of the spliced nodes ---------------------------------------------------


