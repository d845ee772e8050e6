"""convert --share-weights: a Gemm weight written in several layers is written once.

A model that reuses one block (chython-rxnmap runs its attention layer 8 times; an unrolled
recurrence runs its step's product at every step) lowers to Gemm layers each holding the same
constant B. Where two or more Gemms hold an identical B (same bytes, same transB), B becomes one
constant (a MemoryData once materialize_constants runs, fanned out by insert_split's Split) and
each of those Gemms reads it as its second bottom (constantB=0), keeping its own C. The numbers are
the same products; the speed is not: ncnn packs a constant B once at load, a blob B at every run
(scripts/bench_shared_weights.py: 1.8-2.5x slower at 1-24 rows, 1.1x at 256), so it runs only when
asked. Block-quantized Gemms (18=) keep their packed B. One walk to group, one to rewrite.
"""
from __future__ import annotations

import hashlib
from collections import defaultdict

import numpy as np

from converter.ir import Graph, Node

SMALLEST = 4096          # bytes: a tiny B (a 2x2 table) is not worth a blob


def _b_key(node: Node) -> tuple | None:
    """(transB, N, K, digest) of a Gemm's constant B, None when it holds none to share."""
    p = node.params
    if node.op != "Gemm" or not node.ncnn or not p.get(5, 0) or p.get(18, 0) or p.get(4, 0):
        return None
    b = np.asarray(node.weights[0], np.float32)
    if b.nbytes < SMALLEST:
        return None
    digest = hashlib.blake2b(np.ascontiguousarray(b).tobytes(), digest_size=16).digest()
    return p.get(3, 0), p.get(8, 0), p.get(9, 0), digest


def share_repeated_weights(graph: Graph) -> dict:
    if not graph.share_weights:
        return {"gemm_weights_shared": 0}
    groups: dict[tuple, list[Node]] = defaultdict(list)
    for node in graph.topological():
        key = _b_key(node)
        if key is not None:
            groups[key].append(node)
    shared = saved = 0
    for (trans_b, n, k, _), nodes in groups.items():
        if len(nodes) < 2:
            continue
        b = np.asarray(nodes[0].weights[0], np.float32).reshape((n, k) if trans_b else (k, n))
        blob = graph.add_constant(f"{nodes[0].origin or nodes[0].name}_shared_B", b).name
        for node in nodes:
            graph.set_inputs(node, [node.inputs[0], blob, *node.inputs[1:]])   # bottoms A, B; C stays a weight
            node.params[5] = 0
            node.weights = node.weights[1:]
        shared += len(nodes)
        saved += b.nbytes * (len(nodes) - 1)
    return {"gemm_weights_shared": shared, "gemm_weight_bytes_shared": saved}
