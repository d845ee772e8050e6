"""onnx's own node test cases for the transformer-block ops (LayerNormalization with its Mean /
InvStdDev outputs, RMSNormalization, Softmax, Gather, Where, Equal, Not), their expected outputs
against the real ncnn and the interpreter. Inputs after the first that ncnn holds as weights or
constants (scale, bias, Gather's indices) are fixed with `input_values`."""
import importlib

import numpy as np
import onnx.backend.test.case.node as node_cases
import pytest

from converter import convert
from converter.ir import ConversionError
from tests.onnx_cases import node_case_inputs, run_converted_in_ncnn, to_ncnn

FIXED_AFTER_FIRST = ("test_layer_normalization", "test_rms_normalization", "test_gather_")
PREFIXES = FIXED_AFTER_FIRST + ("test_softmax", "test_where", "test_equal", "test_not_")


def cases() -> dict:
    for module in ("layernormalization", "rmsnormalization", "softmax", "gather", "where", "equal", "not_"):
        importlib.import_module(f"onnx.backend.test.case.node.{module}")
    return {c.name: c for c in node_cases._NodeTestCases
            if c.name.startswith(PREFIXES) and "_expanded" not in c.name}


CASES = cases()
REFUSED = {"test_equal_string": "numbers only", "test_equal_string_broadcast": "numbers only"}


def fixed_inputs(name: str):
    """In these cases the inputs after the first are weights or constants to ncnn."""
    return lambda position, _: position > 0 and name.startswith(FIXED_AFTER_FIRST)


@pytest.mark.parametrize("name", sorted(n for n in CASES if n not in REFUSED))
def test_node_case(tmp_path, name):
    case = CASES[name]
    feeds, args = node_case_inputs(case, fixed_inputs(name))
    converted, got = run_converted_in_ncnn(case.model, feeds, tmp_path, **args)
    io = converted.io()
    ours = converted.run({e["ncnn"]: to_ncnn(feeds[e["onnx"]], e) for e in io["inputs"]}, layout="ncnn")
    for entry, want in zip(io["outputs"], case.data_sets[0][1]):
        want = np.asarray(want, np.float64)
        real = got[entry["onnx"]].reshape(want.shape)
        assert np.all(np.abs(real - want) <= 1e-3 * np.abs(want).max() + 1e-3 * np.abs(want)), entry["onnx"]
        np.testing.assert_allclose(ours[entry["ncnn"]].reshape(want.shape), real, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_node_case_refused(name):
    case = CASES[name]
    _, args = node_case_inputs(case, fixed_inputs(name))
    with pytest.raises(ConversionError, match=REFUSED[name]):
        convert(case.model, **args)


def test_every_layer_norm_case_is_covered():
    assert sum(n.startswith("test_layer_normalization") for n in CASES) == 19
    assert sum(n.startswith("test_rms_normalization") for n in CASES) == 19
