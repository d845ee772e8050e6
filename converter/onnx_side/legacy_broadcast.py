"""Opset < 7 elementwise broadcasting (`broadcast=1, axis=k`) rewritten as numpy broadcasting.

In the old rule B is aligned to A starting at axis k; numpy aligns trailing
axes. Appending ones to B's shape turns the first into the second. A constant
B is reshaped (a copy when others use it too); a computed B gets an Unsqueeze.
"""
from __future__ import annotations

import onnx
from onnx import helper, numpy_helper, shape_inference

from converter.ir import ConversionError
from converter.op_groups import LEGACY_BROADCAST


def _ranks(proto: onnx.ModelProto) -> dict[str, int]:
    inferred = shape_inference.infer_shapes(proto)
    g = inferred.graph
    ranks = {t.name: len(t.dims) for t in g.initializer}
    for vi in [*g.input, *g.value_info, *g.output]:
        if vi.type.tensor_type.HasField("shape"):
            ranks[vi.name] = len(vi.type.tensor_type.shape.dim)
    return ranks


def rewrite_legacy_broadcast(proto: onnx.ModelProto) -> onnx.ModelProto:
    proto = onnx.ModelProto.FromString(proto.SerializeToString())
    g = proto.graph
    ranks = _ranks(proto)
    initializers = {t.name: t for t in g.initializer}
    new_nodes = []
    for node in g.node:
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if node.op_type in LEGACY_BROADCAST and attrs.get("broadcast") and "axis" in attrs:
            a, b = node.input[0], node.input[1]
            if a not in ranks or b not in ranks:
                raise ConversionError(f"{node.op_type} node '{node.name}': cannot apply legacy "
                                      f"broadcast axis={attrs['axis']} without the operand ranks")
            axis = attrs["axis"] % ranks[a] if ranks[a] else 0
            pad = ranks[a] - axis - ranks[b]
            if pad < 0:
                raise ConversionError(f"{node.op_type} node '{node.name}': legacy broadcast axis "
                                      f"{attrs['axis']} does not fit operand ranks {ranks[a]}, {ranks[b]}")
            if pad:
                new_b = f"{b}__legacy_bcast_{node.name or len(new_nodes)}"
                if b in initializers:
                    value = numpy_helper.to_array(initializers[b])
                    reshaped = numpy_helper.from_array(value.reshape(value.shape + (1,) * pad), new_b)
                    g.initializer.append(reshaped)
                    if proto.ir_version < 4:     # these IR versions list initializers as inputs
                        g.input.append(helper.make_tensor_value_info(
                            new_b, reshaped.data_type, list(reshaped.dims)))
                else:
                    new_nodes.append(helper.make_node(
                        "Unsqueeze", [b], [new_b], axes=list(range(ranks[b], ranks[b] + pad))))
                node.input[1] = new_b
        if node.op_type in LEGACY_BROADCAST:
            keep = [x for x in node.attribute if x.name not in ("broadcast", "axis")]
            del node.attribute[:]
            node.attribute.extend(keep)
        new_nodes.append(node)
    del g.node[:]
    g.node.extend(new_nodes)
    return proto
