"""khmersm 1.4.2's Khmer word segmenter: a 3-layer transformer encoder exported by the dynamo
exporter, weights in an external .data file, a bool padding mask turned into -inf scores (Not, Where).
Converted at a fixed length, and once at a run-time length checked at several lengths from one file;
both in real ncnn and the interpreter against onnxruntime."""
import numpy as np
import pytest

from tests.real_models.real_check import check_real_model

SEQ = 16


def token_feeds(shapes, seed):
    """Token ids at the length `shapes` gives (default SEQ); seed 0: no padding, then 5 and 10 padded
    positions (at most all but one)."""
    seq = shapes.get("x", [1, SEQ])[1]
    rng = np.random.default_rng(seed)
    mask = np.ones((1, seq), bool)
    mask[0, max(1, seq - seed * 5):] = False
    return {"x": rng.integers(0, 126, (1, seq)).astype(np.int64), "mask": mask}


@pytest.mark.parametrize("backends", [("ncnn",), ("interpreter",)])
def test_khmersm_segmenter(tmp_path, backends):
    converted = check_real_model("khmersm", [{}, {}, {}], tmp_path, input_shapes={"x": [1, SEQ], "mask": [1, SEQ]},
                                 backends=backends, make_feeds=token_feeds)
    types = [n.op for n in converted.graph.topological()]
    assert types.count("LayerNorm") == 6 and "Embed" in types, sorted(set(types))
    assert _attention_layers(types) == 3 and "Softmax" not in types, sorted(set(types))


def _attention_layers(types: list[str]) -> int:
    """MultiHeadAttention, or at khmersm's small embed its Gemm + SDPA form (passes/expand_small_attention.py)."""
    return types.count("MultiHeadAttention") + types.count("SDPA")


def test_khmersm_segmenter_at_run_time_length(tmp_path):
    """No length given: one file for every length (its 5-D qkv split [1,S,1,3,192] merges S with a 1)."""
    lengths = [{"x": [1, n]} for n in (5, 16, 33)]
    converted = check_real_model("khmersm", lengths, tmp_path, make_feeds=token_feeds)
    types = [n.op for n in converted.graph.topological()]
    assert types.count("LayerNorm") == 6 and "Embed" in types, sorted(set(types))
    # its padding mask (1, H, 1, S) is filled to (H, T, S) at run time for the fused layers
    assert _attention_layers(types) == 3 and "Softmax" not in types, sorted(set(types))
