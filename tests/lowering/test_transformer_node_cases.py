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
from converter.ncnn_runtime import run_ncnn
from tests.onnx_cases import to_ncnn

FIXED_AFTER_FIRST = ("test_layer_normalization", "test_rms_normalization", "test_gather_")
PREFIXES = FIXED_AFTER_FIRST + ("test_softmax", "test_where", "test_equal", "test_not_")


def cases() -> dict:
    for module in ("layernormalization", "rmsnormalization", "softmax", "gather", "where", "equal", "not_"):
        importlib.import_module(f"onnx.backend.test.case.node.{module}")
    return {c.name: c for c in node_cases._NodeTestCases
            if c.name.startswith(PREFIXES) and "_expanded" not in c.name}


CASES = cases()
REFUSED = {"test_equal_string": "numbers only", "test_equal_string_broadcast": "numbers only"}


def converted_case(name):
    case = CASES[name]
    inputs, outputs = case.data_sets[0]
    feeds = dict(zip([i.name for i in case.model.graph.input], inputs))
    fixed = dict(list(feeds.items())[1:]) if name.startswith(FIXED_AFTER_FIRST) else {}
    shapes = {k: list(v.shape) for k, v in feeds.items() if k not in fixed}
    return feeds, outputs, lambda: convert(case.model, input_shapes=shapes, input_values=fixed)


@pytest.mark.parametrize("name", sorted(n for n in CASES if n not in REFUSED))
def test_node_case(tmp_path, name):
    feeds, outputs, convert_case = converted_case(name)
    converted = convert_case()
    param, bin_ = tmp_path / "m.param", tmp_path / "m.bin"
    converted.save(param, bin_)
    io = converted.io()
    ncnn_feeds = {e["ncnn"]: to_ncnn(feeds[e["onnx"]], e) for e in io["inputs"]}
    got = run_ncnn(param, bin_, ncnn_feeds, [e["ncnn"] for e in io["outputs"]])
    ours = converted.run(ncnn_feeds)
    for entry, want in zip(io["outputs"], outputs):
        want = np.asarray(want, np.float64)
        real = got[entry["ncnn"]].reshape(want.shape)
        assert np.all(np.abs(real - want) <= 1e-3 * np.abs(want).max() + 1e-3 * np.abs(want)), entry["onnx"]
        np.testing.assert_allclose(ours[entry["ncnn"]].reshape(want.shape), real, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_node_case_refused(name):
    with pytest.raises(ConversionError, match=REFUSED[name]):
        converted_case(name)[2]()


def test_every_layer_norm_case_is_covered():
    assert sum(n.startswith("test_layer_normalization") for n in CASES) == 19
    assert sum(n.startswith("test_rms_normalization") for n in CASES) == 19
