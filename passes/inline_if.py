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
from onnx import helper, numpy_helper, shape_inference

from converter.batch_axis import RULES, same_axis
from converter.ir import Graph, Node, Tensor
from converter.onnx_cut import CutRefusal
from converter.onnx_defaults import fill_defaults

from .fold_constants import CONTROL_FLOW, fold_node


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


def incomplete_shapes(graph: Graph, node: Node) -> bool:
    """Shape inference left an output's shape unknown (e.g. behind a Pad whose pads fold later)."""
    return any(graph.tensors[o].shape is None or None in graph.tensors[o].shape
               for o in node.outputs if o and o in graph.tensors)


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


def splice_subgraph(graph: Graph, node: Node, branch: onnx.GraphProto, outer: dict[str, str], scopes: dict,
            targets: list[str]) -> list[Node]:
    """Add `branch`'s nodes so that its outputs are the tensors `targets`; returns them in branch order."""
    names = dict(outer)
    shapes = {vi.name: vi for vi in [*branch.value_info, *branch.output]}
    for init in branch.initializer:
        value = numpy_helper.to_array(init)
        names[init.name] = graph.add_constant(init.name, value).name
    # the If's outputs take the names of the branch tensors that make them, where that is one-to-one
    rename_to_if = {}
    for local, target in zip([o.name for o in branch.output], targets):
        if local not in rename_to_if and local not in names and target:
            rename_to_if[local] = target
    spliced, identities = [], []
    for index, proto in enumerate(branch.node):
        for out in filter(None, proto.output):
            if out in rename_to_if:
                names[out] = rename_to_if[out]
            else:
                names[out] = out if out not in graph.tensors else graph.fresh_name(out)
                graph.add_tensor(_tensor(names[out], shapes.get(out)))
        new = _node(graph, proto, index, names)
        scopes[new.name] = names
        graph.add_node(new)
        spliced.append(new)
    for local, target in zip([o.name for o in branch.output], targets):
        if target and names.get(local) != target:    # an outer tensor, an initializer or a repeat
            identity = Node(graph.fresh_name(f"{node.name}_out"), "Identity", [names.get(local, local)], [target],
                            origin=node.name)
            graph.add_node(identity)
            identities.append(identity)
    return spliced + identities


def _tensor(name: str, value_info) -> Tensor:
    if value_info is None or not value_info.type.HasField("tensor_type"):
        return Tensor(name, None)
    tt = value_info.type.tensor_type
    shape = tuple(d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim) \
        if tt.HasField("shape") else None
    dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tt.elem_type)) if tt.elem_type else np.dtype(np.float32)
    return Tensor(name, shape, dtype)


def _node(graph: Graph, proto: onnx.NodeProto, index: int, names: dict[str, str]) -> Node:
    name = proto.name or f"{proto.op_type}_{index}"
    if name in graph.nodes:
        name = graph.fresh_name(name)
    attrs = {}
    for a in proto.attribute:
        value = helper.get_attribute_value(a)
        attrs[a.name] = numpy_helper.to_array(value) if isinstance(value, onnx.TensorProto) else (
            value.decode() if isinstance(value, bytes) else value)
    # a branch's nodes join the loaded ones, which carry their schema defaults
    return fill_defaults(Node(name, proto.op_type, [names.get(i, i) for i in proto.input],
                              [names[o] if o else "" for o in proto.output], attrs), graph.opset)


# ---- shapes of the spliced nodes ---------------------------------------------------

def _type_proto(t: Tensor) -> onnx.TypeProto:
    elem = helper.np_dtype_to_tensor_dtype(t.dtype)
    return helper.make_tensor_type_proto(elem, None if t.shape is None else
                                         [d if d is not None else None for d in t.shape])


def refine_shapes(graph: Graph, node: Node) -> bool:
    """Infer the node's output shapes again and re-derive batch axes; True if anything changed."""
    inferred = _infer(graph, node)
    changed = False
    rule = RULES.get(node.op, same_axis)
    for out in filter(None, node.outputs):
        t = graph.tensors[out]
        before = (t.shape, t.dtype, t.batch_axis)
        found = inferred.get(out)
        if found is not None:
            t.shape, t.dtype = _merge(t.shape, found[0]), found[1]
        t.batch_axis = rule(graph, node, t)
        changed |= before != (t.shape, t.dtype, t.batch_axis)
    return changed


def _merge(old, new):
    if new is None:
        return old
    if old is None or len(old) != len(new):
        return new
    return tuple(n if n is not None else o for o, n in zip(old, new))


def _infer(graph: Graph, node: Node) -> dict[str, tuple]:
    """onnx's shape inference for one node, constant inputs given as data; {} if it cannot run."""
    try:
        schema = onnx.defs.get_schema(node.op, graph.opset)
        names = {i: f"i{k}" for k, i in enumerate(node.inputs) if i}
        proto = helper.make_node(node.op, [names.get(i, "") for i in node.inputs],
                                 [f"o{k}" if o else "" for k, o in enumerate(node.outputs)], **{
                                     k: (numpy_helper.from_array(v) if isinstance(v, np.ndarray) else v)
                                     for k, v in node.attrs.items()})
        types = {names[i]: _type_proto(graph.tensors[i]) for i in names}
        data = {names[i]: numpy_helper.from_array(np.asarray(graph.value(i)))
                for i in names if graph.value(i) is not None}
        result = shape_inference.infer_node_outputs(
            schema, proto, types, data, opset_imports=[helper.make_opsetid("", graph.opset)])
    except Exception:     # inference is best effort: the lowering names what stays unknown
        return {}
    found = {}
    for k, out in enumerate(node.outputs):
        tp = result.get(f"o{k}")
        if out and tp is not None and tp.HasField("tensor_type"):
            tt = tp.tensor_type
            shape = tuple(d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim) \
                if tt.HasField("shape") else None
            found[out] = (shape, np.dtype(helper.tensor_dtype_to_np_dtype(tt.elem_type)))
    return found
