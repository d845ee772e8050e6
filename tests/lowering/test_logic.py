"""Comparisons, boolean logic and Where (attention-mask arithmetic) on 0/1 floats, in real ncnn
and the interpreter against onnxruntime."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from converter import convert
from converter.ir import ConversionError
from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model

I64, BOOL, F = TensorProto.INT64, TensorProto.BOOL, TensorProto.FLOAT


def as_float(name, out="y"):
    return helper.make_node("Cast", [name], [out], to=F)


@pytest.mark.parametrize("op", ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"])
@pytest.mark.parametrize("a_shape, b_shape, elem", [([1, 3, 5], [1, 3, 5], I64), ([1, 2, 3, 4], [4], I64),
                                                   ([1, 4, 6], [1, 4, 6], F)])
def test_comparisons(tmp_path, op, a_shape, b_shape, elem):
    model = make_model([helper.make_node(op, ["a", "b"], ["c"]), as_float("c")],
                       [("a", a_shape, elem), ("b", b_shape, elem)], [("y", None)])
    rng = np.random.default_rng(0)
    dtype = np.int64 if elem == I64 else np.float32
    feeds = {"a": rng.integers(0, 3, a_shape).astype(dtype), "b": rng.integers(0, 3, b_shape).astype(dtype)}
    if elem == F:      # floats: equal, near and far values
        feeds["b"] = np.where(rng.random(b_shape) < 0.5, feeds["a"], feeds["a"] + rng.choice([1e-6, -3.0], b_shape))
        feeds["b"] = feeds["b"].astype(np.float32)
    converted = check_in_ncnn(model, tmp_path, feeds=feeds)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


@pytest.mark.parametrize("op", ["And", "Or", "Xor"])
def test_boolean_logic(tmp_path, op):
    nodes = [helper.make_node(op, ["a", "b"], ["c"]), helper.make_node("Not", ["c"], ["d"]), as_float("d")]
    model = make_model(nodes, [("a", [1, 3, 4], BOOL), ("b", [1, 1, 4], BOOL)], [("y", None)])
    converted = check_in_ncnn(model, tmp_path)
    assert [e["dtype"] for e in converted.io()["inputs"]] == ["float32", "float32"]
    check_interpreter_matches_ncnn(converted, model, tmp_path)


@pytest.mark.parametrize("a, b", [("x", "z"), ("big", "x"), ("x", "zero"), ("zero", "x"), ("x", "row")])
def test_where(tmp_path, a, b):
    consts = {"big": np.array(-3.4028e38, np.float32), "zero": np.array(0.0, np.float32),
              "row": np.arange(6, dtype=np.float32)}
    model = make_model([helper.make_node("Where", ["c", a, b], ["y"])],
                       [("c", [1, 1, 4, 6], BOOL), ("x", [1, 3, 4, 6]), ("z", [1, 3, 4, 6])], [("y", None)],
                       [(k, v) for k, v in consts.items() if k in (a, b)])
    converted = check_in_ncnn(model, tmp_path)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_where_long_inputs(tmp_path):
    model = make_model([helper.make_node("Where", ["c", "a", "b"], ["w"]), as_float("w")],
                       [("c", [2, 2], BOOL), ("a", [2, 2], I64), ("b", [2, 2], I64)], [("y", None)])
    check_in_ncnn(model, tmp_path, high=1000)


def test_where_with_nan_constant_is_refused():
    """A constant -inf branch converts (tests/lowering/test_masked_fill.py); NaN has no exact form."""
    model = make_model([helper.make_node("Where", ["c", "nan", "x"], ["y"])], [("c", [1, 4], BOOL), ("x", [1, 4])],
                       [("y", None)], [("nan", np.array(np.nan, np.float32))])
    with pytest.raises(ConversionError, match="inf or NaN"):
        convert(model)


def test_exported_padding_mask(tmp_path):
    """HF-style: (1 - mask[:, None, None, :]) * finfo.min added to scores, then Softmax."""
    nodes = [helper.make_node("Unsqueeze", ["mask", "axes"], ["m4"]), helper.make_node("Cast", ["m4"], ["mf"], to=F),
             helper.make_node("Sub", ["one", "mf"], ["inv"]), helper.make_node("Mul", ["inv", "fmin"], ["bias"]),
             helper.make_node("Add", ["scores", "bias"], ["s"]), helper.make_node("Softmax", ["s"], ["y"], axis=-1)]
    model = make_model(nodes, [("scores", [1, 2, 5, 5]), ("mask", [1, 5], I64)], [("y", None)],
                       [("axes", np.array([1, 2], np.int64)), ("one", np.array(1.0, np.float32)),
                        ("fmin", np.array(np.finfo(np.float32).min, np.float32))])
    feeds = {"scores": np.random.default_rng(0).standard_normal((1, 2, 5, 5)).astype(np.float32),
             "mask": np.array([[1, 1, 1, 0, 0]], np.int64)}
    converted = check_in_ncnn(model, tmp_path, feeds=feeds)
    check_interpreter_matches_ncnn(converted, model, tmp_path)
