"""Per-op knowledge is kept one way (converter/op_table.py's OpTable, filled by a decorator beside each
function), and an ONNX op family is spelled out once (converter/op_groups.py)."""
from __future__ import annotations

import ast
from pathlib import Path

import onnx
import pytest

import converter.lowering as lowering
from converter import op_groups
from converter.interpreter.size_guard import GUARDS
from converter.ncnn_side.layers import SPECS
from converter.onnx_side import genai_ops, qoperator_ops
from converter.op_table import OpTable
from converter.shapes import axis_boundaries, batch_axis
from converter.shapes.extent_rules import EXTENT_RULES
from passes.convert_window_gathers import STEPS
from passes.express_shapes import EXPRESSIONS
from passes.infer_shapes import OWN_RULES

ROOT = Path(__file__).resolve().parents[2]
TABLES = {"lowering": lowering.LOWERINGS, "batch axis": batch_axis.RULES, "axis boundaries": axis_boundaries.RULES,
          "size guards": GUARDS, "shape rules": OWN_RULES, "extent rules": EXTENT_RULES,
          "run-time size expressions": EXPRESSIONS, "window-gather steps": STEPS}
FAMILIES = {name: value for name, value in vars(op_groups).items() if isinstance(value, frozenset)}
# what a key may name: an ONNX op (any domain, any opset), an ncnn layer (what fusions leave), or a
# contrib op the loader reads
KNOWN_OPS = ({s.name for s in onnx.defs.get_all_schemas_with_history()} | set(SPECS) | genai_ops.MS_OPS
             | genai_ops.ONNX_DOMAIN_OPS | qoperator_ops.MS_OPS)


@pytest.mark.parametrize("name", TABLES)
def test_per_op_tables_are_op_tables_of_known_ops(name):
    table = TABLES[name]
    lowering.load_all()
    assert isinstance(table, OpTable) and len(table) > 0, name
    assert not set(table) - KNOWN_OPS, f"{name}: no such op {sorted(set(table) - KNOWN_OPS)}"


def test_an_op_entered_twice_is_refused():
    table = OpTable("rule")
    table.register("Relu", "Add")(len)
    with pytest.raises(ValueError, match="Add has two rules: len and abs"):
        table.register("Add")(abs)
    assert table == {"Relu": len, "Add": len}


def _set_literals(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Set):
            yield node.lineno, {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}


def test_an_op_family_is_listed_once():
    files = [p for p in [*ROOT.glob("converter/**/*.py"), *ROOT.glob("passes/*.py")] if p.name != "op_groups.py"]
    literals = [(p, line, names) for p in files for line, names in _set_literals(p)]
    for family, members in FAMILIES.items():
        elsewhere = [f"{p.relative_to(ROOT)}:{line}" for p, line, names in literals if names >= members]
        assert not elsewhere, f"op_groups.{family} spelled out again at {elsewhere}"
