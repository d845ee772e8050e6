"""The .bin against the model's own weights: what `convert` prints, warns about and records.

The model's weight bytes are float32-equivalent: every element of its initializers and Constant
nodes (subgraphs included) counts 4 bytes, whatever its stored type, since the .bin holds float32
(an fp16 or int8 model is compared with what it would be in float32); a ConstantOfShape of a
constant shape counts as the tensor it fills (onnx's light_* models store their weights so). Above RATIO_WARNED the
warning names the largest cause found in the final layers: one weight written several times
(identical arrays in several layers: a model's shared weights, per-item copies), else the
layer holding the most weight bytes.
"""
from __future__ import annotations

import hashlib
from collections import defaultdict

import numpy as np
import onnx
from onnx import numpy_helper

from converter.ir import Graph
from converter.ncnn_side.writer import bin_chunks, c_order_pieces

RATIO_WARNED = 1.1
EXTRA_WARNED = 16 * 1024      # and more than this many bytes over: a few KB of shape constants are no size problem
SMALLEST_DUPLICATE = 4096          # bytes: a repeated tiny constant (a 0, an eps) is no cause worth naming
# layers whose repeated weight convert --share-weights writes once (passes/share_repeated_weights.py,
# fuse_attention leaving a reused block as Gemms), and the trade it makes, as measured on chython-rxnmap
SHAREABLE = {"Gemm", "MultiHeadAttention"}
SHARE_TRADE = "measured 2.1-2.6x slower on chython-rxnmap (ncnn packs a blob B at every run)"
SHARE_OFFER = f"--share-weights writes a Gemm/attention weight once, {SHARE_TRADE}"


def model_weight_bytes(proto: onnx.ModelProto) -> int:
    """Float32-equivalent bytes of the model's initializers and Constant values, subgraphs included."""
    return 4 * _elements(proto.graph)


def _elements(graph: onnx.GraphProto) -> int:
    total = sum(int(np.prod(t.dims, dtype=np.int64)) for t in graph.initializer)
    shapes = {t.name: t for t in graph.initializer if t.data_type == onnx.TensorProto.INT64 and len(t.dims) == 1}
    shapes.update({n.output[0]: a.t for n in graph.node if n.op_type == "Constant" for a in n.attribute
                   if a.type == onnx.AttributeProto.TENSOR and a.t.data_type == onnx.TensorProto.INT64})
    for node in graph.node:
        if node.op_type == "ConstantOfShape" and node.input and node.input[0] in shapes:
            total += int(np.prod(numpy_helper.to_array(shapes[node.input[0]]), dtype=np.int64))
        for attr in node.attribute:
            if node.op_type == "Constant" and attr.type == onnx.AttributeProto.TENSOR:
                total += int(np.prod(attr.t.dims, dtype=np.int64))
            elif node.op_type == "Constant" and attr.type in (onnx.AttributeProto.FLOATS, onnx.AttributeProto.INTS):
                total += len(attr.floats) + len(attr.ints)
            elif attr.type == onnx.AttributeProto.GRAPH:
                total += _elements(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                total += sum(_elements(g) for g in attr.graphs)
    return total


def duplicated_weights(graph: Graph) -> list[dict]:
    """Weights written more than once (identical arrays in several layers), largest excess first:
    [{"bytes": excess, "copies": n, "size": bytes of one copy, "layers": [origin names]}]."""
    groups: dict[tuple, list[str]] = defaultdict(list)
    sizes: dict[tuple, int] = {}
    for node in graph.nodes.values():
        for w in node.weights:
            w = np.asarray(w)
            if w.nbytes < SMALLEST_DUPLICATE:
                continue
            digest = hashlib.blake2b(digest_size=16)
            for piece in c_order_pieces(w, w.dtype):     # in place, or a piece at a time: no copy of a 544 MB table
                digest.update(piece)
            key = (w.dtype.str, w.size, digest.digest())
            groups[key].append(node.origin or node.name)
            sizes[key] = w.nbytes
    found = [{"bytes": sizes[k] * (len(v) - 1), "copies": len(v), "size": sizes[k], "layers": sorted(set(v))}
             for k, v in groups.items() if len(v) > 1]
    return sorted(found, key=lambda d: -d["bytes"])


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n / 1e3:.1f} KB"


def largest_cause(graph: Graph, duplicates: list[dict], batch_repeated: int = 0) -> str:
    if batch_repeated and (not duplicates or batch_repeated >= duplicates[0]["bytes"]):
        return (f"weights repeated per sample of a batch merged into channels ({_mb(batch_repeated)}); "
                f"--share-weights reads a Conv's weight once, sample by sample, at some speed cost")
    if duplicates:
        top = duplicates[0]
        names = ", ".join(top["layers"][:3]) + (", ..." if len(top["layers"]) > 3 else "")
        ops = {n.op for n in graph.nodes.values() if (n.origin or n.name) in set(top["layers"]) and n.weights}
        offer = f"; {SHARE_OFFER}" if ops & SHAREABLE and not graph.share_weights else ""
        return (f"a {_mb(top['size'])} weight written {top['copies']} times ({_mb(top['bytes'])} repeated; "
                f"layers from {names}){offer}")
    node = max(graph.nodes.values(), key=lambda n: sum(np.asarray(w).nbytes for w in n.weights))
    held = sum(np.asarray(w).nbytes for w in node.weights)
    return f"the largest layer, {node.op} '{node.origin or node.name}', holds {_mb(held)}"


def size_record(graph: Graph, bin_bytes: int, weight_bytes: int | None,
                batch_repeated: int = 0, shared: tuple[int, int] = (0, 0)) -> tuple[dict, list[str]]:
    """The --json fields and the warnings (one, above RATIO_WARNED) for a written .bin; `batch_repeated`:
    the bytes merge_batch_into_channels added repeating constants per sample; `shared`: the Gemms
    --share-weights made read one weight blob, and the bytes that kept out of the .bin."""
    duplicates = duplicated_weights(graph)
    record = {"bin_bytes": bin_bytes, "model_weight_bytes": weight_bytes,
              "duplicated_weight_bytes": sum(d["bytes"] for d in duplicates),
              "batch_repeated_weight_bytes": batch_repeated,
              "shared_weight_layers": shared[0], "shared_weight_bytes_saved": shared[1]}
    if duplicates:
        record["duplicated_weights"] = [{k: d[k] for k in ("bytes", "copies", "layers")} for d in duplicates[:5]]
    warnings = []
    if weight_bytes and bin_bytes > RATIO_WARNED * weight_bytes and bin_bytes - weight_bytes > EXTRA_WARNED:
        warnings.append(f".bin is {bin_bytes / weight_bytes:.1f}x the model's weights ({_mb(bin_bytes)} for "
                        f"{_mb(weight_bytes)}); largest cause: {largest_cause(graph, duplicates, batch_repeated)}")
    return record, warnings


def size_line(record: dict) -> str:
    weights = record.get("model_weight_bytes")
    if not weights:
        return f"  .bin {_mb(record['bin_bytes'])} (the model holds no weights)"
    line = (f"  .bin {_mb(record['bin_bytes'])} for {_mb(weights)} of ONNX weights (float32): "
            f"{record['bin_bytes'] / weights:.2f}x")
    if record.get("shared_weight_layers"):
        line += (f"; --share-weights: {record['shared_weight_layers']} Gemms read shared weights "
                 f"({_mb(record['shared_weight_bytes_saved'])} not repeated), {SHARE_TRADE}")
    return line


def written_bin_bytes(graph: Graph, fp16: bool = False) -> int:
    """The size the writer gives the .bin, without writing it."""
    return sum(memoryview(chunk).nbytes for chunk in bin_chunks(graph, fp16))
