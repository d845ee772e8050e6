"""Per-op knowledge is kept one way (converter/op_table.py's OpTable, filled by a decorator beside each
function), and an ONNX op family is spelled out once (converter/op_groups.py)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

import converter.lowering as lowering
from converter import op_groups
from converter.interpreter.size_guard import GUARDS
from converter.op_table import OpTable
from converter.shapes import axis_boundaries, batch_axis
from passes.infer_shapes import OWN_RULES

ROOT = Path(__file__).resolve().parents[2]
TABLES = {"lowering": lowering.LOWERINGS, "batch axis": batch_axis.RULES, "axis boundaries": axis_boundaries.RULES,
          "size guards": GUARDS, "shape rules": OWN_RULES}
FAMILIES = {name: value for name, value in vars(op_groups).items() if isinstance(value, frozenset)}


@pytest.mark.parametrize("name", TABLES)
def test_per_op_tables_are_op_tables(name):
    table = TABLES[name]
    lowering.load_all()
    assert isinstance(table, OpTable) and len(table) > 0, name


def _set_literals(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Set):
            yield node.lineno, {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}


@pytest.mark.parametrize("family", ["REDUCE"])
def test_an_op_family_is_listed_once(family):
    members = FAMILIES[family]
    elsewhere = [f"{p.relative_to(ROOT)}:{line}" for p in [*ROOT.glob("converter/**/*.py"), *ROOT.glob("passes/*.py")]
                 if p.name != "op_groups.py" for line, names in _set_literals(p) if names >= members]
    assert not elsewhere, f"op_groups.{family} spelled out again at {elsewhere}"
