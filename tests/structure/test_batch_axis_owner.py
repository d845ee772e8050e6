"""Batch axes are decided in one place: converter/shapes/batch_axis.py's rules, applied to the whole graph
by passes/infer_shapes.py (assign_batch_axes) and to a node made later by follow_batch_axis. The loader
records shapes only. Any other write to a tensor's batch_axis is one of the few listed here, with why."""
from __future__ import annotations

import ast
import functools
from collections import Counter
from pathlib import Path

from converter.onnx_side.loader import load_onnx
from passes.infer_shapes import infer_shapes

ROOT = Path(__file__).resolve().parents[2]
OWNER = "converter/shapes/batch_axis.py"
# file -> writes of `.batch_axis = ...` it may make, and why the rules cannot make them
OTHER_WRITERS = {
    "converter/rewrite/fold.py": 1,                 # a tensor folded to a constant: no batch axis (as for constants)
    "converter/lowering/constant.py": 1,            # the same, for a Constant node's output
    "passes/resolve_sequences.py": 1,               # the same, for a sequence's length
    "passes/resolve_cache_positions.py": 1,         # the same, for a settled comparison
    "passes/merge_batch_into_channels.py": 2,       # re-lays (N, C, ...) out as (1, N*C, ...): axis 0 by design
    "passes/merge_wide_axes.py": 1,                 # merged axes: the group holding the old batch axis
    "passes/merge_broadcast_axes.py": 1,            # merged axes: the same
    "passes/fuse_sdpa.py": 1,                       # K's transpose folded into the fused layer's K
    "passes/fuse_attention.py": 1,                  # a mask constant laid out as ncnn's attention reads it
    "passes/flatten_gather_indices.py": 1,          # a Gather rewritten to flat indices keeps its data's axis
    "passes/move_input_layout.py": 1,               # an input taken channels-first: its batch axis moves with the perm
}


@functools.cache
def _library_files() -> tuple[tuple[Path, ast.AST], ...]:
    """Every library module that names a batch axis (only those can write one or import its rules), parsed
    once for the tests here."""
    files = sorted([*ROOT.glob("converter/**/*.py"), *ROOT.glob("passes/*.py")])
    texts = [(p, p.read_text()) for p in files]
    return tuple((p, ast.parse(text)) for p, text in texts if "batch_ax" in text)


def _rel(p: Path) -> str:
    return p.relative_to(ROOT).as_posix()


def _batch_axis_writes(tree: ast.AST) -> int:
    count = 0
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        for t in targets:
            for leaf in (t.elts if isinstance(t, ast.Tuple) else [t]):
                count += isinstance(leaf, ast.Attribute) and leaf.attr == "batch_axis"
    return count


def test_only_the_owner_and_the_listed_passes_write_batch_axes():
    writes = Counter()
    for p, tree in _library_files():
        n = _batch_axis_writes(tree)
        if n and _rel(p) != OWNER:
            writes[_rel(p)] = n
    assert dict(writes) == OTHER_WRITERS, "a batch axis written outside converter/shapes/batch_axis.py: use " \
        "follow_batch_axis, or list the file in OTHER_WRITERS with why the rules cannot give it"


def test_the_rules_are_applied_by_the_owner_and_the_whole_graph_by_infer_shapes():
    calls, rule_readers = [], []
    for p, tree in _library_files():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "assign_batch_axes":
                calls.append(_rel(p))
            if isinstance(node, ast.ImportFrom) and node.module == "converter.shapes.batch_axis":
                rule_readers += [_rel(p) for a in node.names if a.name in ("RULES", "same_axis", "assign_batch_axes")
                                 and _rel(p) != "passes/infer_shapes.py"]
    assert set(calls) == {"passes/infer_shapes.py"}, calls
    assert not rule_readers, f"batch-axis rules applied outside the owner (use follow_batch_axis): {rule_readers}"


def test_the_loader_records_shapes_and_infer_shapes_assigns_axes():
    graph = load_onnx(str(ROOT / "models/cnn_small.onnx"))
    assert all(t.batch_axis is None for t in graph.tensors.values())
    infer_shapes(graph)
    (name,) = graph.inputs
    assert graph.tensors[name].shape[0] == 1 and graph.tensors[name].batch_axis == 0
    assert graph.tensors[graph.outputs[0]].batch_axis == 0
