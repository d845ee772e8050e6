"""The three tables agree: every ncnn layer the reader accepts has a kernel, every layer a
lowering emits has a spec, every lowered ONNX op has a test that names it."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from converter.interpreter import kernels as _kernels  # noqa: F401  (registers the kernels)
from converter.interpreter.registry import KERNELS
from converter.lowering import LOWERINGS, load_all
from converter.ncnn_side.layers import SPECS
from scripts.op_index import ROOT, literals_by_test_file, files_testing

# layer types the reader accepts that the interpreter deliberately cannot run, with why
# (none today: ArgMax, which no ncnn build can create, is refused before it gets a spec)
NO_KERNEL: dict[str, str] = {}
# lowered ONNX ops with no test naming them, with why
UNTESTED: dict[str, str] = {}

LOWERING_FILES = sorted((ROOT / "converter" / "lowering").glob("*.py"))


def _layer_type_literals(path: Path) -> list[tuple[str, int]]:
    """Layer types written out where a layer is built: layer(src, graph, "Type", ...) and
    `type_ = "Type"` (or `"A" if ... else "B"`). (Lowerings also build ONNX Nodes to hand to
    other lowerings; those are not layers.)"""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        candidates = []
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id == "layer":
                candidates += node.args[2:3] + [k.value for k in node.keywords if k.arg == "type_"]
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "type_" for t in node.targets):
            candidates.append(node.value)
        for c in candidates:
            for value in (c.body, c.orelse) if isinstance(c, ast.IfExp) else (c,):
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    found.append((value.value, value.lineno))
    return found


def test_every_layer_spec_has_a_kernel():
    missing = sorted(set(SPECS) - set(KERNELS) - set(NO_KERNEL))
    assert not missing, f"ncnn layer types the reader accepts but the interpreter cannot run: {missing}"


def test_every_kernel_has_a_layer_spec():
    orphans = sorted(set(KERNELS) - set(SPECS))
    assert not orphans, f"kernels for layer types the reader does not accept: {orphans}"


def test_exceptions_are_still_exceptions():
    load_all()
    stale = sorted(set(NO_KERNEL) & set(KERNELS)) + sorted(set(UNTESTED) - set(LOWERINGS))
    assert not stale, f"listed as exceptions but no longer are: {stale}"


@pytest.mark.parametrize("path", LOWERING_FILES, ids=lambda p: p.stem)
def test_every_emitted_layer_type_has_a_spec(path):
    unknown = [f"{t} (line {line})" for t, line in _layer_type_literals(path) if t not in SPECS]
    assert not unknown, f"{path.name} emits layer types the reader has no spec for: {unknown}"


def test_the_literal_scan_sees_the_layers():
    """Guards the scan above against matching nothing: these are built in well-known places."""
    seen = {t for path in LOWERING_FILES for t, _ in _layer_type_literals(path)}
    assert {"Convolution", "ConvolutionDepthWise", "UnaryOp", "BinaryOp", "Interp", "Reshape"} <= seen


def test_every_lowered_op_has_a_test():
    load_all()
    mentions = literals_by_test_file()
    untested = sorted(op for op in LOWERINGS if op not in UNTESTED and not files_testing(op, mentions))
    assert not untested, f"lowered ONNX ops no test names: {untested}; add a test in tests/lowering/"
