"""passes/ holds only passes: every public module there defines the pass it is named after, that pass
runs in PIPELINE, and no pass imports another pass's private names (shared pieces live in
converter/rewrite/ or converter/shapes/)."""
from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import passes

PASS_FILES = sorted(p for p in (Path(passes.__file__).parent).glob("*.py") if not p.name.startswith("_"))
# passes a pipeline pass calls itself rather than PIPELINE listing them (none today)
CALLED_ONLY: set[str] = set()


@pytest.mark.parametrize("path", PASS_FILES, ids=lambda p: p.stem)
def test_module_is_a_pipeline_pass(path: Path):
    module = importlib.import_module(f"passes.{path.stem}")
    fn = getattr(module, path.stem, None)
    assert callable(fn), f"passes/{path.name} defines no pass named {path.stem}: move shared code out of passes/"
    assert fn in passes.PIPELINE or path.stem in CALLED_ONLY, f"{path.stem} is not in PIPELINE"


@pytest.mark.parametrize("path", PASS_FILES, ids=lambda p: p.stem)
def test_no_private_names_across_passes(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("passes")):
            private = [a.name for a in node.names if a.name.startswith("_")]
            assert not private, f"passes/{path.name} imports private {private} from .{node.module}"
