"""convert --share-weights: a 2-D Conv over a batch of 2..16 reads its weight once (one MemoryData,
a dynamic-weight Convolution per sample) instead of merged into channels with a copy per sample."""
import numpy as np
import pytest
from onnx import helper

from converter.ncnn_side.bin_size import written_bin_bytes
from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model, ncnn_layer_types


def batched_convs(batch, group=1):
    rng = np.random.default_rng(3)
    w1 = rng.uniform(-0.3, 0.3, (8, 4 // group, 3, 3)).astype(np.float32)
    w2 = rng.uniform(-0.3, 0.3, (6, 8, 1, 1)).astype(np.float32)
    b1 = rng.uniform(-1, 1, 8).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["a"], pads=[1, 0, 1, 2], strides=[1, 2], group=group),
             helper.make_node("Relu", ["a"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p", "w2"], ["y"])]
    return make_model(nodes, [("x", [batch, 4, 10, 12])], [("y", None)], [("w1", w1), ("b1", b1), ("w2", w2)])


@pytest.mark.parametrize("batch, group", [(2, 1), (3, 2)])
def test_shared_weights_are_written_once(tmp_path, batch, group):
    model = batched_convs(batch, group)
    weights = sum(int(np.prod(t.dims)) for t in model.graph.initializer) * 4
    merged = check_in_ncnn(model, tmp_path / "merged")
    assert merged.stats["batch_repeated_weight_bytes"] == (batch - 1) * weights
    shared = check_in_ncnn(model, tmp_path / "shared", share_weights=True)
    assert shared.stats["batch_repeated_weight_bytes"] == 0
    assert written_bin_bytes(shared.graph) <= weights + 64
    assert ncnn_layer_types(shared).count("MemoryData") == 3       # w1, b1, w2: once each
    check_interpreter_matches_ncnn(shared, model, tmp_path)
