"""RotaryEmbed against the real ncnn (half-split and interleaved pairs), and the decode-step SDPA
shapes the decoder files rely on: with kv_cache the pip runtime's present key is still corrupted, so
the files concatenate the cache in the graph and run SDPA without it."""
import numpy as np
import pytest

from .layer_check import check, ids, one_layer_graph, run_real


@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("heads,seq,dim", [(4, 1, 16), (2, 7, 8), (3, 5, 64), (1, 3, 2)])
def test_rotaryembed(tmp_path, rng, interleaved, heads, seq, dim):
    x = rng.standard_normal((heads, seq, dim)).astype(np.float32)
    angles = rng.uniform(-20, 20, (seq, dim // 2)).astype(np.float32)
    out = check(tmp_path, "RotaryEmbed", ids("RotaryEmbed", interleaved=interleaved),
                [x, np.cos(angles), np.sin(angles)], rtol=1e-6, atol=1e-6)
    pairs = (x[..., 0::2], x[..., 1::2]) if interleaved else (x[..., :dim // 2], x[..., dim // 2:])
    rotated = pairs[0] * np.cos(angles) - pairs[1] * np.sin(angles)     # numpy's own formula
    first = out["out0"][..., 0::2] if interleaved else out["out0"][..., :dim // 2]
    np.testing.assert_allclose(first, rotated, rtol=1e-5, atol=1e-5)


def _attention(q, k, v):
    k, v = (np.repeat(t, q.shape[0] // t.shape[0], axis=0) for t in (k, v))
    scores = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    return (weights / weights.sum(-1, keepdims=True)) @ v


def test_decode_step_sdpa_kv_cache_still_corrupts_the_present_key(tmp_path, rng):
    """pip ncnn 1.0.20261020, x86, a decode step with grouped-query heads (4 query heads, 2 kv
    heads, 1 new token, 5 cached): with 7=1 the present value is past + new but the present key is
    not, and the output is off by O(1); the same SDPA without kv_cache on the concatenated cache is
    exact. When this test fails, ncnn fixed kv_cache: the decoder files could then use it."""
    q, k, v = (rng.standard_normal(s).astype(np.float32) for s in [(4, 1, 8), (2, 1, 8), (2, 1, 8)])
    past_k, past_v = (rng.standard_normal((2, 5, 8)).astype(np.float32) for _ in range(2))
    key, value = np.concatenate([past_k, k], 1), np.concatenate([past_v, v], 1)
    graph, feeds = one_layer_graph("SDPA", ids("SDPA", kv_cache=1), [q, k, v, past_k, past_v], n_outputs=3)
    real = run_real(tmp_path, graph, feeds)
    np.testing.assert_array_equal(real["out2"], value)
    assert real["out1"].shape == key.shape and not np.allclose(real["out1"], key)
    assert not np.allclose(real["out0"], _attention(q, key, value), atol=1e-3)
    graph, feeds = one_layer_graph("SDPA", {}, [q, key, value])
    np.testing.assert_allclose(run_real(tmp_path, graph, feeds)["out0"], _attention(q, key, value), atol=1e-6)
