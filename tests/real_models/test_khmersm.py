"""khmersm 1.4.2's Khmer word segmenter: a 3-layer transformer encoder exported by the dynamo
exporter, weights in an external .data file, a bool padding mask turned into -inf scores (Not, Where).
One conversion at a fixed length, checked in real ncnn and the interpreter against onnxruntime."""
import numpy as np
import pytest

from tests.real_models.real_check import check_real_model

SEQ = 16


def token_feeds(shapes, seed):
    rng = np.random.default_rng(seed)
    mask = np.ones((1, SEQ), bool)
    mask[0, SEQ - seed * 5:] = False           # seed 0: no padding; then 5 and 10 padded positions
    return {"x": rng.integers(0, 126, (1, SEQ)).astype(np.int64), "mask": mask}


@pytest.mark.parametrize("backends", [("ncnn",), ("interpreter",)])
def test_khmersm_segmenter(tmp_path, backends):
    converted = check_real_model("khmersm", [{}, {}, {}], tmp_path, input_shapes={"x": [1, SEQ], "mask": [1, SEQ]},
                                 backends=backends, make_feeds=token_feeds)
    types = [n.op for n in converted.graph.topological()]
    assert types.count("LayerNorm") == 6 and "Embed" in types, sorted(set(types))
