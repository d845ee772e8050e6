"""ONNX subgraphs (If branches, Loop bodies) spliced into the Graph, and shapes refined node by node:
what inline_if and unroll_loops both do."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference

from converter.ir import Graph, Node, Tensor
from converter.onnx_side.defaults import fill_defaults
from converter.shapes.batch_axis import follow_batch_axis


def incomplete_shapes(graph: Graph, node: Node) -> bool:
    """Shape inference left an output's shape unknown (e.g. behind a Pad whose pads fold later)."""
    return any(graph.tensors[o].shape is None or None in graph.tensors[o].shape
               for o in node.outputs if o and o in graph.tensors)


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


def _type_proto(t: Tensor) -> onnx.TypeProto:
    elem = helper.np_dtype_to_tensor_dtype(t.dtype)
    return helper.make_tensor_type_proto(elem, None if t.shape is None else
                                         [d if d is not None else None for d in t.shape])


def refine_shapes(graph: Graph, node: Node) -> bool:
    """Infer the node's output shapes again and re-derive batch axes; True if anything changed."""
    inferred = _infer(graph, node)
    changed = False
    for out in filter(None, node.outputs):
        t = graph.tensors[out]
        before = (t.shape, t.dtype, t.batch_axis)
        found = inferred.get(out)
        if found is not None:
            t.shape, t.dtype = _merge(t.shape, found[0]), found[1]
        follow_batch_axis(graph, node, t)
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
