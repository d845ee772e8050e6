"""Pow that stays ncnn's BinaryOp pow (wrong for bases <= 0) converts with one warning line naming
the node, on stderr and in --json's "warnings"; exponents with a UnaryOp form and constant
positive bases convert silently."""
import json
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import helper

from converter import convert
from onnx_cases import make_model

SHAPE = [1, 3, 4]


def pow_model(base=None, exponent=None):
    """x ** e; a given base or exponent is a constant, the other one an input."""
    consts = [(n, np.asarray(v, np.float32)) for n, v in (("x", base), ("e", exponent)) if v is not None]
    inputs = [(n, SHAPE) for n in ("x", "e") if n not in dict(consts)]
    return make_model([helper.make_node("Pow", ["x", "e"], ["y"], name="the_pow")], inputs, [("y", SHAPE)], consts)


def test_cli_warns_once_naming_the_node(tmp_path):
    path = tmp_path / "pow.onnx"
    onnx.save(pow_model(exponent=1.7), str(path))
    result = subprocess.run([sys.executable, "-m", "converter", "convert", str(path), "-o", str(tmp_path), "--json"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("onnx2ncnn: warning: Pow node 'the_pow'"), lines
    assert "bases <= 0" in lines[0]
    assert json.loads(result.stdout)["warnings"] == [lines[0].removeprefix("onnx2ncnn: warning: ")]


@pytest.mark.parametrize("base,exponent,warned", [
    (None, None, True),                       # both at run time (the node test test_pow)
    (None, 1.7, True),
    (np.full(SHAPE[-1:], 2.0), None, False),  # a constant positive base: ncnn's pow is right
    (np.array([2.0, -1.0, 3.0, 1.0]), None, True),
    (None, 2.0, False), (None, -0.5, False),  # UnaryOps, no BinaryOp pow
])
def test_warned_exactly_where_binaryop_pow_stays(base, exponent, warned):
    warnings = convert(pow_model(base, exponent)).stats["warnings"]
    assert len(warnings) == int(warned), warnings
