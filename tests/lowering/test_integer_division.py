"""Integer Div truncates toward zero exactly in the real ncnn, whose x86 BinaryOp div is not
correctly rounded (6 / 2 gives 2.9999998): quotients that are whole numbers are the cases that
went wrong, so every input here is full of exact multiples, of both signs."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from converter import convert
from tests.onnx_cases import (assert_matches_reference, make_model, ncnn_layer_types, run_converted_in_ncnn,
                              to_ncnn)

I64 = TensorProto.INT64


def division_model(divisor=None, shape=(4, 64)):
    """y = a / b in int64, b an input of the same shape or a constant scalar."""
    inputs = [("a", list(shape), I64)] + ([("b", list(shape), I64)] if divisor is None else [])
    inits = [] if divisor is None else [("b", np.array(divisor, np.int64))]
    model = make_model([helper.make_node("Div", ["a", "b"], ["y"])], inputs, [("y", list(shape))], inits)
    model.graph.output[0].type.tensor_type.elem_type = I64
    return model


def multiples(rng, divisors, shape):
    """Numerators: mostly exact multiples of their divisors, some one off either side, some 0."""
    base = rng.integers(-5000, 5000, shape) * divisors + rng.choice([0, 0, 0, 1, -1], shape)
    return np.where(rng.random(shape) < 0.05, 0, base).astype(np.int64)


def check_exact(model, feeds, tmp_path):
    converted, outputs = run_converted_in_ncnn(model, feeds, tmp_path)
    assert_matches_reference(model, feeds, outputs, rtol=0, atol=0)
    io = converted.io()
    ours = converted.run({e["ncnn"]: to_ncnn(feeds[e["onnx"]], e) for e in io["inputs"]}, layout="ncnn")
    assert_matches_reference(model, feeds, {e["onnx"]: ours[e["ncnn"]] for e in io["outputs"]}, rtol=0, atol=0)
    return converted


def test_run_time_divisor(tmp_path):
    rng = np.random.default_rng(0)
    b = rng.choice([-7, -3, -2, -1, 1, 2, 3, 5, 160, 1000], (4, 64)).astype(np.int64)
    check_exact(division_model(), {"a": multiples(rng, b, b.shape), "b": b}, tmp_path)


@pytest.mark.parametrize("divisor", [3, 7, 160, -3, -160, 1000])
def test_constant_divisor(tmp_path, divisor):
    rng = np.random.default_rng(divisor + 1000)
    check_exact(division_model(divisor), {"a": multiples(rng, divisor, (4, 64))}, tmp_path)


@pytest.mark.parametrize("divisor", [1, 2, 8, -4])
def test_power_of_two_divisor_is_one_multiply(tmp_path, divisor):
    rng = np.random.default_rng(divisor + 10)
    converted = check_exact(division_model(divisor), {"a": multiples(rng, divisor, (4, 64))}, tmp_path)
    assert ncnn_layer_types(converted).count("BinaryOp") == 1


def test_quotients_up_to_two_to_the_23(tmp_path):
    """The first guess is within one of the truth while |a| < 2**23: the largest numerators."""
    rng = np.random.default_rng(3)
    b = rng.integers(1, 50, (4, 64)).astype(np.int64)
    a = (2**23 - 1) // b * b * rng.choice([-1, 1], b.shape)
    check_exact(division_model(), {"a": a.astype(np.int64), "b": b}, tmp_path)


def test_one_element_lengths(tmp_path):
    """onnx-asr's length arithmetic: lens // 160 on one sample count (16000 gave 99)."""
    model = division_model(160, shape=(1,))
    for lens in (16000, 159, 160, 48000):
        check_exact(model, {"a": np.array([lens], np.int64)}, tmp_path)


def float_division_model(divisor, then=None):
    nodes = [helper.make_node("Div", ["x", "d"], ["q"])]
    if then:
        nodes.append(helper.make_node(then, ["q"], ["y"]))
    model = make_model(nodes, [("x", [2, 32])], [("y" if then else "q", [2, 32])],
                       [("d", np.array(divisor, np.float32))])
    return model


def test_float_division_by_a_power_of_two_is_exact(tmp_path):
    """x / 0.25 as x * 4: exact where ncnn's div is not; floor after it cannot drop by one."""
    model = float_division_model(0.25, then="Floor")
    feeds = {"x": (np.arange(64, dtype=np.float32).reshape(2, 32) - 32) / 4}
    converted, outputs = run_converted_in_ncnn(model, feeds, tmp_path)
    assert_matches_reference(model, feeds, outputs, rtol=0, atol=0)
    assert converted.graph.warnings == []


def test_float_quotient_rounded_next_is_warned():
    converted = convert(float_division_model(3.0, then="Floor"))
    assert any("not correctly rounded" in w and "Floor" in w for w in converted.graph.warnings)
    assert not convert(float_division_model(3.0)).graph.warnings


def test_division_by_constant_zero_is_refused():
    with pytest.raises(Exception, match="integer division by a constant 0"):
        convert(division_model(0))


def test_reference_is_truncation():
    """The premise: onnxruntime's int64 Div truncates toward zero (-7 / 2 = -3)."""
    model = division_model(2, shape=(2,))
    import onnxruntime as ort
    session = ort.InferenceSession(model.SerializeToString())
    assert session.run(None, {"a": np.array([-7, 7], np.int64)})[0].tolist() == [-3, 3]
    assert onnx.checker.check_model(model) is None
