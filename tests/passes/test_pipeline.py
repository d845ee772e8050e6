"""Every pass in PIPELINE fires on some model of a small corpus, and reports it in its counts; run
twice in a row, a pass changes nothing the second time (counts all 0, same nodes and tensors)."""
from __future__ import annotations

from pathlib import Path

import pytest

from converter.onnx_loader import load_onnx
from passes import PIPELINE

MODELS = Path(__file__).resolve().parents[2] / "models"
CORPUS = sorted(MODELS.glob("*.onnx"))


def _changes(stats: dict) -> int:
    """The pass's counts (fold failures are a name -> reason record, not a count)."""
    return sum(v for v in stats.values() if isinstance(v, int) and not isinstance(v, bool))


def _wiring(graph) -> tuple:
    return (sorted((n.name, n.op, tuple(n.inputs), tuple(n.outputs)) for n in graph.nodes.values()),
            sorted(graph.tensors))


@pytest.fixture(scope="module")
def runs() -> dict:
    """model -> pass name -> (first run's change count, second run's change count, graph changed)."""
    found = {}
    for path in CORPUS:
        graph = load_onnx(path)
        per_pass = {}
        for p in PIPELINE:
            first = _changes(p(graph) or {})
            before = _wiring(graph)
            second = _changes(p(graph) or {})
            per_pass[p.__name__] = (first, second, _wiring(graph) != before)
        found[path.name] = per_pass
    return found


# passes no model in models/ exercises yet, with the test that makes each fire on a hand-built graph
NEEDS_OTHER_MODELS = {
    "inline_if": "tests/passes/test_inline_if.py", "express_shapes": "tests/passes/test_express_shapes.py",
    "fuse_conv_affine": "tests/passes/test_fuse_conv_affine.py",
    "fuse_hardswish": "tests/lowering/test_fuse_hardswish.py", "fuse_layernorm": "tests/passes/test_fuse_layernorm.py",
    "fuse_rmsnorm": "tests/passes/test_fuse_layernorm.py", "fuse_gelu_tanh": "tests/passes/test_fuse_gelu_tanh.py",
    "convert_batched_conv1d": "tests/passes/test_convert_batched_conv1d.py",
    "rewrite_softmax_nan_guard": "tests/lowering/test_softmax_nan_guard.py",
    "flatten_gather_indices": "tests/lowering/test_mask_glue.py",
    "merge_broadcast_axes": "tests/passes/test_merge_broadcast_axes.py",
    "split_wide_transposes": "tests/passes/test_merge_wide_axes.py",   # (wide-transpose cases)
    "merge_wide_axes": "tests/passes/test_merge_wide_axes.py",
    "refuse_empty_blobs": "tests/passes/test_refuse_empty_blobs.py",   # a check: it refuses, never rewrites
}


def test_listed_tests_exist():
    root = MODELS.parent
    assert all((root / path).is_file() for path in NEEDS_OTHER_MODELS.values())


def test_each_pass_fires_on_some_model(runs):
    silent = [p.__name__ for p in PIPELINE
              if p.__name__ not in NEEDS_OTHER_MODELS and not any(r[p.__name__][0] for r in runs.values())]
    assert not silent, f"passes that changed nothing on {[p.name for p in CORPUS]}: {silent}"


def test_each_pass_changes_nothing_run_twice(runs):
    moving = {(model, name): (second, changed) for model, r in runs.items()
              for name, (_, second, changed) in r.items() if second or changed}
    assert not moving, f"(model, pass): (second run's counts, graph changed): {moving}"
