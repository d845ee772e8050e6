"""Every pass in PIPELINE fires (reports a nonzero count) on some case of a small corpus: models/*.onnx,
a few exported models for the passes those miss, and tiny hand-built graphs; run twice in a row, a
pass changes nothing the second time (counts all 0, the same nodes and tensors)."""
from __future__ import annotations

from pathlib import Path

import pytest

from converter.onnx_side.loader import load_onnx
from passes import PIPELINE
from pipeline_cases import CASES

MODELS = Path(__file__).resolve().parents[2] / "models"
# pass -> the exported model (small, fast) that makes it fire where models/*.onnx do not
EXPORTED = {"convert_batched_conv1d": "peer_cases/nn_Conv1d_batch.onnx", "fuse_rmsnorm": "peer_cases/F_rms_norm.onnx",
            "split_wide_transposes": "peer_cases/F_pixel_unshuffle.onnx",
            "merge_wide_axes": "peer_cases/F_pixel_unshuffle.onnx", "fuse_gelu_tanh": "zoo/albert_dynamo.onnx",
            "flatten_gather_indices": "zoo/distilbert_ts.onnx",
            "merge_batch_into_channels": "peer_cases/F_max_pool2d.onnx",
            "unroll_loops": "peer_cases/torch_tensor_split.onnx", "resolve_sequences": "peer_cases/torch_tensor_split.onnx",
            "convert_window_gathers": "peer_cases/nn_AdaptiveAvgPool1d.onnx",
            "fold_transpose_chains": "peer_cases/nn_MultiheadAttention.onnx",
            "convert_log_buckets": "zoo/t5_encoder_dyn_dynamo.onnx",
            "insert_wide_matmul_reshapes": "zoo/twins_ts.onnx",
            "eliminate_empty_concat_inputs": "zoo/phi3_ts.onnx",
            "resolve_cache_positions": "encdec/whisper_decoder_with_past_ts.onnx",
            "fuse_recurrent_cells": "unrolled/rnn_square.onnx"}
CORPUS = {**{p.name: p for p in sorted(MODELS.glob("*.onnx"))},
          **{path: MODELS / path for path in EXPORTED.values()},
          **{f"hand-built {name}": build for name, build in CASES.items()}}
# a check, not a rewrite: it refuses an empty blob (tests/passes/test_refuse_empty_blobs.py), never changes the graph
# fit_target_release fires only for an older --target-ncnn, which a loaded graph does not carry:
# tests/passes/test_fit_target_release.py shows each of its rewrites firing
# drop_activation_qdq fires only with --int8 fast (tests/passes/test_drop_activation_qdq.py shows it firing)
# share_repeated_weights fires only with --share-weights (tests/passes/test_share_repeated_weights.py)
# move_input_layout fires only with --nchw-input (tests/passes/test_move_input_layout.py shows it firing)
NEVER_FIRES = {"refuse_empty_blobs", "fit_target_release", "drop_activation_qdq", "share_repeated_weights",
               "move_input_layout"}


def _changes(stats: dict) -> int:
    """The pass's counts (fold failures are a name -> reason record, not a count)."""
    return sum(v for v in stats.values() if isinstance(v, int) and not isinstance(v, bool))


def _wiring(graph) -> tuple:
    return (sorted((n.name, n.op, tuple(n.inputs), tuple(n.outputs)) for n in graph.nodes.values()),
            sorted(graph.tensors))


@pytest.fixture(scope="module")
def runs() -> dict:
    """case -> pass name -> (first run's change count, second run's change count, graph changed)."""
    found = {}
    for case, source in CORPUS.items():
        graph = load_onnx(source if isinstance(source, Path) else source())
        per_pass = {}
        for p in PIPELINE:
            first = _changes(p(graph) or {})
            before = _wiring(graph)
            second = _changes(p(graph) or {})
            per_pass[p.__name__] = (first, second, _wiring(graph) != before)
        found[case] = per_pass
    return found


def test_each_pass_fires_on_some_case(runs):
    silent = [p.__name__ for p in PIPELINE
              if p.__name__ not in NEVER_FIRES and not any(r[p.__name__][0] for r in runs.values())]
    assert not silent, f"passes that changed nothing on {list(CORPUS)}: {silent}"


def test_each_hand_built_case_fires_its_pass(runs):
    quiet = [name for name in CASES if not runs[f"hand-built {name}"][name][0]]
    assert not quiet, f"hand-built cases whose pass did not fire: {quiet}"


def test_each_pass_changes_nothing_run_twice(runs):
    moving = {(case, name): (second, changed) for case, r in runs.items()
              for name, (_, second, changed) in r.items() if second or changed}
    assert not moving, f"(case, pass): (second run's counts, graph changed): {moving}"
