"""MultiHeadAttention and SDPA against the real ncnn."""
import numpy as np
import pytest

from converter.interpreter import InterpreterError

from .layer_check import check, ids, interpret

SRC, DST = 5, 7


def mha_case(rng, embed=8, heads=2, qdim=8, kdim=8, vdim=8, **extra):
    params = ids("MultiHeadAttention", embed_dim=embed, num_heads=heads, weight_data_size=embed * qdim,
                 kdim=kdim, vdim=vdim, **extra)
    normal = lambda *s: (rng.standard_normal(s) / np.sqrt(s[-1])).astype(np.float32)  # noqa: E731
    weights = [normal(embed, qdim), normal(embed), normal(embed, kdim), normal(embed),
               normal(embed, vdim), normal(embed), normal(qdim, embed), normal(qdim)]
    return params, weights


@pytest.mark.parametrize("blobs", ["q", "q,kv", "q,k,v"])
@pytest.mark.parametrize("mask", [None, "2d", "3d"])
def test_multiheadattention(tmp_path, rng, blobs, mask):
    qdim, kdim, vdim = (12, 6, 10) if blobs == "q,k,v" else (12, 6, 6) if blobs == "q,kv" else (12, 12, 12)
    params, weights = mha_case(rng, embed=8, heads=2, qdim=qdim, kdim=kdim, vdim=vdim,
                               attn_mask=int(mask is not None))
    dst = SRC if blobs == "q" else DST
    inputs = [rng.standard_normal((SRC, qdim)).astype(np.float32)]
    if blobs == "q,kv":
        inputs.append(rng.standard_normal((DST, kdim)).astype(np.float32))
    if blobs == "q,k,v":
        inputs += [rng.standard_normal((DST, kdim)).astype(np.float32),
                   rng.standard_normal((DST, vdim)).astype(np.float32)]
    if mask:
        inputs.append(rng.standard_normal((2, SRC, dst) if mask == "3d" else (SRC, dst)).astype(np.float32))
    out = check(tmp_path, "MultiHeadAttention", params, inputs, weights)
    assert out["out0"].shape == (SRC, qdim)


@pytest.mark.parametrize("heads, scale", [(1, None), (4, None), (2, 0.3)])
def test_multiheadattention_heads_and_scale(tmp_path, rng, heads, scale):
    extra = {} if scale is None else {"scale": scale}
    params, weights = mha_case(rng, embed=16, heads=heads, qdim=16, kdim=16, vdim=16, **extra)
    check(tmp_path, "MultiHeadAttention", params, [rng.standard_normal((SRC, 16)).astype(np.float32)], weights)


def test_multiheadattention_kv_cache_is_refused(rng):
    params, weights = mha_case(rng, kv_cache=1)
    with pytest.raises(InterpreterError, match="kv_cache"):
        interpret("MultiHeadAttention", params, [np.zeros((SRC, 8), np.float32)], weights)


@pytest.mark.parametrize("heads, groups", [(2, 2), (4, 2), (3, 1)])
@pytest.mark.parametrize("mask", [None, (SRC, DST), (1, SRC, DST), "per_head"], ids=str)
@pytest.mark.parametrize("scale", [0.0, 0.5])
def test_sdpa(tmp_path, rng, heads, groups, mask, scale):
    e, ev = 6, 5
    inputs = [rng.standard_normal(s).astype(np.float32) for s in [(heads, SRC, e), (groups, DST, e),
                                                                 (groups, DST, ev)]]
    if mask is not None:
        shape = (heads, SRC, DST) if mask == "per_head" else mask
        inputs.append(rng.standard_normal(shape).astype(np.float32))
    params = ids("SDPA", attn_mask=int(mask is not None), scale=scale)
    out = check(tmp_path, "SDPA", params, inputs)
    assert out["out0"].shape == (heads, SRC, ev)


def test_sdpa_kv_cache_is_refused_because_ncnn_returns_garbage(tmp_path, rng):
    """The real runtime's joined key is not past + current (it holds uninitialized memory)."""
    from .layer_check import one_layer_graph, run_real
    past = 3
    q, k, v, past_k, past_v = (rng.standard_normal(s).astype(np.float32)
                               for s in [(2, SRC, 16), (2, DST, 16), (2, DST, 16), (2, past, 16), (2, past, 16)])
    graph, feeds = one_layer_graph("SDPA", ids("SDPA", kv_cache=1), [q, k, v, past_k, past_v], n_outputs=3)
    real = run_real(tmp_path, graph, feeds)
    assert real["out1"].shape == (2, past + DST, 16)
    assert not np.allclose(real["out1"], np.concatenate([past_k, k], axis=1))
    with pytest.raises(InterpreterError, match="kv_cache"):
        interpret("SDPA", ids("SDPA", kv_cache=1), [q, k, v, past_k, past_v], n_outputs=3)
