"""onnxruntime-genai's model-builder ops (com.microsoft GroupQueryAttention, RotaryEmbedding,
SkipSimplifiedLayerNormalization, MatMulNBits; SimplifiedLayerNormalization in the onnx domain):
what the loader needs to accept them.

onnx knows none of them, so shape inference runs on a twin of the model where each one is a few
standard ops giving outputs of the same shapes (as converter/onnx_side/qoperator_shapes.py does for QOperator
nodes); the model keeps its nodes, which converter/lowering/genai_*.py turn into ncnn layers.

GroupQueryAttention's seqlens_k and total_sequence_length inputs are computed by the builder from
attention_mask (ReduceSum - 1, Shape[1]). At batch 1 with a mask of ones, which is what
onnxruntime-genai itself feeds, they say past length + new tokens, which the ncnn graph reads
from the blobs' extents; the lowering does not read them (a padded mask is not honoured).
"""
from __future__ import annotations

import re

import onnx
from onnx import helper

from converter.shapes.batch_axis import gather, leading_batch, rule

MS_DOMAIN = "com.microsoft"
MS_OPS = {"GroupQueryAttention", "RotaryEmbedding", "SkipSimplifiedLayerNormalization", "MatMulNBits",
          "SimplifiedLayerNormalization", "GatherBlockQuantized"}
ONNX_DOMAIN_OPS = {"SimplifiedLayerNormalization"}     # onnxruntime registers it in the onnx domain


# the output [batch, S, H*D] and present [batch, G, T, D] keep the query's leading batch
rule("GroupQueryAttention")(leading_batch)
rule("GatherBlockQuantized")(gather)      # rows of a constant table: the indices' batch axis


def is_genai_op(node: onnx.NodeProto) -> bool:
    if node.domain == MS_DOMAIN:
        return node.op_type in MS_OPS
    return node.domain in ("", "ai.onnx") and node.op_type in ONNX_DOMAIN_OPS


def known_op_complaint(message: str) -> bool:
    """onnx's checker refusing only an op of the onnx domain that onnxruntime registers and the
    converter lowers (SimplifiedLayerNormalization)."""
    found = re.search(r"No Op registered for (\w+) with domain_version", message)
    return found is not None and found.group(1) in ONNX_DOMAIN_OPS


def _attrs(node: onnx.NodeProto) -> dict:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def twin(node: onnx.NodeProto, index: int, dims: dict | None = None) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
    """Standard nodes (and small initializers) whose outputs have the shapes of `node`'s."""
    stem = f"{node.name or node.op_type}#{index}"
    ins = list(node.input) + [""] * 12
    outs = list(node.output) + [""] * 4
    attrs = _attrs(node)
    mk, inits = helper.make_node, []

    def const(name: str, values, dtype=onnx.TensorProto.INT64):
        inits.append(helper.make_tensor(f"{stem}/{name}", dtype, [len(values)], values))
        return f"{stem}/{name}"

    op = node.op_type
    if op == "SimplifiedLayerNormalization":
        return [mk("Mul", [ins[0], ins[1]], [outs[0]])], inits
    if op == "SkipSimplifiedLayerNormalization":
        total = outs[3] or f"{stem}/sum"
        nodes = [mk("Add", [ins[0], ins[1]], [total])]
        if outs[0]:
            nodes.append(mk("Mul", [total, ins[2]], [outs[0]]))
        return nodes, inits
    if op == "RotaryEmbedding":
        return [mk("Identity", [ins[0]], [outs[0]])], inits
    if op == "MatMulNBits":          # [..., K] -> [..., N]: one column of A times N zeros
        first = mk("Slice", [ins[0], const("s", [0]), const("e", [1]), const("a", [-1])], [f"{stem}/col"])
        zeros = const("zeros", [0.0] * int(attrs["N"]), onnx.TensorProto.FLOAT)
        return [first, mk("Mul", [f"{stem}/col", zeros], [outs[0]])], inits
    if op == "GroupQueryAttention":
        return _gqa_twin(node, ins, outs, attrs, stem, const), inits
    if op == "GatherBlockQuantized":  # indices [...] -> [..., K], K = scale columns * block (an embedding)
        width = (dims or {}).get(ins[2], [0, 0])[-1] * int(attrs.get("block_size", 128))
        zeros = const("zeros", [0.0] * width, onnx.TensorProto.FLOAT)
        return [mk("Cast", [ins[1]], [f"{stem}/f"], to=onnx.TensorProto.FLOAT),
                mk("Unsqueeze", [f"{stem}/f", const("last", [-1])], [f"{stem}/u"]),
                mk("Mul", [f"{stem}/u", zeros], [outs[0]])], inits
    raise ValueError(op)


def _gqa_twin(node, ins, outs, attrs, stem, const) -> list[onnx.NodeProto]:
    """query [B, S, H*D] (or packed [B, S, (H+2G)*D]) -> output [B, S, H*D]; present = past ++ new."""
    mk = helper.make_node
    heads, kv_heads = int(attrs["num_heads"]), int(attrs.get("kv_num_heads", attrs["num_heads"]))
    nodes = []
    if ins[1]:                       # separate q, k, v
        query, key, value = ins[0], ins[1], ins[2]
    else:                            # packed: q's width is H*D of the (H+2G)*D
        query, key, value = f"{stem}/q", f"{stem}/k", f"{stem}/v"
        nodes.append(mk("Split", [ins[0], const("split_parts", [heads, kv_heads, kv_heads])],
                        [f"{stem}/qh", f"{stem}/kh", f"{stem}/vh"], axis=-1))
        # Split by heads proportions: width/(H+2G) per head, so q gets H of them
        nodes = [mk("Reshape", [ins[0], const("heads", [0, 0, heads + 2 * kv_heads, -1])], [f"{stem}/by_head"]),
                 mk("Split", [f"{stem}/by_head", const("parts", [heads, kv_heads, kv_heads])],
                    [f"{stem}/qh", f"{stem}/kh", f"{stem}/vh"], axis=2),
                 mk("Reshape", [f"{stem}/qh", const("flat", [0, 0, -1])], [query]),
                 mk("Reshape", [f"{stem}/kh", const("flat_k", [0, 0, -1])], [key]),
                 mk("Reshape", [f"{stem}/vh", const("flat_v", [0, 0, -1])], [value])]
    nodes.append(mk("Identity", [query], [outs[0]]))
    for new, past, present in ((key, ins[3], outs[1]), (value, ins[4], outs[2])):
        if not present:
            continue
        split = f"{present}/heads"
        nodes += [mk("Reshape", [new, const(f"{present}_kv", [0, 0, kv_heads, -1])], [split]),
                  mk("Transpose", [split], [f"{split}/t"], perm=[0, 2, 1, 3])]
        nodes.append(mk("Concat", [past, f"{split}/t"], [present], axis=2) if past
                     else mk("Identity", [f"{split}/t"], [present]))
    return nodes


def infer_with_genai_ops(proto: onnx.ModelProto, infer) -> onnx.ModelProto:
    """`infer(proto)`, seeing through genai ops; the returned model keeps them."""
    if not any(is_genai_op(n) for n in proto.graph.node):
        return infer(proto)
    shell = onnx.ModelProto()
    shell.CopyFrom(proto)
    del shell.graph.node[:]
    inits = []
    dims = {t.name: list(t.dims) for t in proto.graph.initializer}
    for i, n in enumerate(proto.graph.node):
        if is_genai_op(n):
            nodes, extra = twin(n, i, dims)
            shell.graph.node.extend(nodes)
            inits += extra
        else:
            shell.graph.node.append(n)
    shell.graph.initializer.extend(inits)
    inferred = infer(shell)
    own = {o for n in proto.graph.node for o in n.output}
    result = onnx.ModelProto()
    result.CopyFrom(proto)
    del result.graph.value_info[:]
    result.graph.value_info.extend(vi for vi in inferred.graph.value_info if vi.name in own)
    del result.graph.output[:]
    result.graph.output.extend(inferred.graph.output)
    _fix_head_size(result, inferred)
    return result


def _fix_head_size(result: onnx.ModelProto, inferred: onnx.ModelProto) -> None:
    """The builder declares the past's head size by a name (kv_cache_dim); the query's inferred width
    gives its number, which the past inputs then declare (examples and checks feed that size)."""
    widths = {vi.name: vi.type.tensor_type.shape.dim for vi in inferred.graph.value_info}
    widths.update({vi.name: vi.type.tensor_type.shape.dim for vi in inferred.graph.input})
    sizes = {}
    for n in result.graph.node:
        if n.domain != MS_DOMAIN or n.op_type != "GroupQueryAttention" or len(n.input) < 5:
            continue
        attrs = _attrs(n)
        dims = widths.get(n.input[0])
        if not dims or len(dims) != 3 or not dims[2].HasField("dim_value"):
            continue
        heads = attrs["num_heads"] + (0 if len(n.input) > 1 and n.input[1] else 2 * attrs["kv_num_heads"])
        sizes.update({name: dims[2].dim_value // heads for name in n.input[3:5] if name})
    for vi in result.graph.input:
        dims = vi.type.tensor_type.shape.dim
        if vi.name in sizes and len(dims) == 4 and not dims[3].HasField("dim_value"):
            dims[3].Clear()
            dims[3].dim_value = sizes[vi.name]


def detach_sequence_lengths(proto: onnx.ModelProto) -> None:
    """In place: GroupQueryAttention's seqlens_k / total_sequence_length inputs are dropped (see the
    module's note) and the nodes computing only them removed, so the mask's integer arithmetic
    never reaches the ncnn graph."""
    graph = proto.graph
    changed = False
    for n in graph.node:
        if n.domain == MS_DOMAIN and n.op_type == "GroupQueryAttention":
            for slot in (5, 6):
                if len(n.input) > slot and n.input[slot]:
                    n.input[slot] = ""
                    changed = True
    if not changed:
        return
    used = {o.name for o in graph.output}
    keep = []
    for n in reversed(graph.node):          # nodes are in topological order: one backward walk
        if any(o and o in used for o in n.output):
            keep.append(n)
            used.update(i for i in n.input if i)
    if len(keep) != len(graph.node):
        kept = list(reversed(keep))
        del graph.node[:]
        graph.node.extend(kept)
