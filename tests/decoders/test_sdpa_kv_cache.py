"""Why the decoders' cache is a Concat: SDPA with 7=kv_cache in the pip runtime (1.0.20261020, x86)
returns a corrupted present key and wrong attention, while the same attention over the joined
cache without 7=1 is exact. If a runtime fixes it, the first test fails: then the lowering
(converter/lowering/genai_attention.py) can hand the past to SDPA."""
from __future__ import annotations

import numpy as np

from converter.ir import Graph, Node
from converter.ncnn_side.runtime import NcnnRunner
from converter.ncnn_side.writer import save


def _graph(kv_cache: bool) -> Graph:
    graph = Graph("sdpa")
    names = ["q", "k", "v"] + (["past_k", "past_v"] if kv_cache else [])
    for name in names:
        graph.add_node(Node(f"in_{name}", "Input", [], [name], ncnn=True))
        graph.inputs.append(name)
    outs = ["out", "present_k", "present_v"] if kv_cache else ["out"]
    graph.add_node(Node("sdpa", "SDPA", names, outs, params={7: int(kv_cache)}, ncnn=True))
    graph.outputs = outs
    return graph


def _reference(q, k, v):
    groups = q.shape[0] // k.shape[0]
    k, v = np.repeat(k, groups, 0), np.repeat(v, groups, 0)
    s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[2])
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)) @ v


def _run(tmp_path, kv_cache: bool, feeds: dict) -> dict:
    graph = _graph(kv_cache)
    save(graph, tmp_path / f"s{int(kv_cache)}.param", tmp_path / f"s{int(kv_cache)}.bin")
    runner = NcnnRunner(threads=1)
    try:
        return runner.run(tmp_path / f"s{int(kv_cache)}.param", tmp_path / f"s{int(kv_cache)}.bin", feeds,
                          graph.outputs)
    finally:
        runner.close()


def _data():
    rng = np.random.default_rng(0)
    q = rng.standard_normal((4, 1, 8)).astype(np.float32)
    k, v = (rng.standard_normal((2, 1, 8)).astype(np.float32) for _ in range(2))
    past_k, past_v = (rng.standard_normal((2, 5, 8)).astype(np.float32) for _ in range(2))
    return q, k, v, past_k, past_v


def test_sdpa_kv_cache_is_still_wrong_in_the_pip_runtime(tmp_path):
    q, k, v, past_k, past_v = _data()
    got = _run(tmp_path, True, {"q": q, "k": k, "v": v, "past_k": past_k, "past_v": past_v})
    joined_k = np.concatenate([past_k, k], 1)
    np.testing.assert_allclose(got["present_v"], np.concatenate([past_v, v], 1))     # the value is right
    assert np.max(np.abs(got["present_k"] - joined_k)) > 1e-3                        # the key is not
    assert np.max(np.abs(got["out"] - _reference(q, joined_k, np.concatenate([past_v, v], 1)))) > 1e-3


def test_sdpa_over_the_joined_cache_is_exact(tmp_path):
    q, k, v, past_k, past_v = _data()
    joined_k, joined_v = np.concatenate([past_k, k], 1), np.concatenate([past_v, v], 1)
    got = _run(tmp_path, False, {"q": q, "k": joined_k, "v": joined_v})
    np.testing.assert_allclose(got["out"], _reference(q, joined_k, joined_v), rtol=1e-5, atol=1e-6)
