"""A constant table read at computed indices (RoBERTa's position ids) or at ids something else
also reads as numbers: one-hot rows times the table (converter/lowering/one_hot_gather.py).
Real ncnn and the interpreter against onnxruntime."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from converter import convert
from converter.ir import ConversionError
from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model, ncnn_layer_types

RNG = np.random.default_rng(3)
TABLE = RNG.standard_normal((5, 3)).astype(np.float32)


def check(model, tmp_path, feeds):
    converted = check_in_ncnn(model, tmp_path, feeds=feeds, rtol=0, atol=0)     # rows copied bit for bit
    types = ncnn_layer_types(converted)     # the one-hot product: InnerProduct, or Gemm over several rows
    assert {"InnerProduct", "Gemm"} & set(types) and "Embed" not in types
    check_interpreter_matches_ncnn(converted, model, tmp_path)
    return converted


@pytest.mark.parametrize("shape", [[1, 6], [1, 1], [2, 3]])
def test_computed_indices_negative_ones_wrap(tmp_path, shape):
    model = make_model([helper.make_node("Cast", ["x"], ["i"], to=TensorProto.INT64),
                        helper.make_node("Gather", ["t", "i"], ["y"])], [("x", shape)], [("y", None)], [("t", TABLE)])
    check(model, tmp_path, {"x": RNG.uniform(-4.99, 4.99, shape).astype(np.float32)})


def test_ids_also_read_as_numbers_are_fed_as_numbers(tmp_path):
    model = make_model([helper.make_node("Gather", ["t", "ids"], ["y"]),
                        helper.make_node("Cast", ["ids"], ["f"], to=TensorProto.FLOAT)],
                       [("ids", [1, 4], TensorProto.INT64)], [("y", None), ("f", [1, 4])], [("t", TABLE)])
    converted = check(model, tmp_path, {"ids": np.array([[4, 0, 2, 2]], np.int64)})
    assert converted.io()["inputs"][0]["dtype"] == "float32"


def roberta_embeddings(pad=1, positions=12, vocab=9):
    """RoBERTa: position ids = cumsum(ids != pad) * (ids != pad) + pad, both tables looked up."""
    nodes = [helper.make_node("Equal", ["ids", "pad"], ["is_pad"]),
             helper.make_node("Not", ["is_pad"], ["keep"]),
             helper.make_node("Cast", ["keep"], ["keep_i"], to=TensorProto.INT32),
             helper.make_node("CumSum", ["keep_i", "axis"], ["count"]),
             helper.make_node("Mul", ["count", "keep_i"], ["masked"]),
             helper.make_node("Cast", ["masked"], ["masked_l"], to=TensorProto.INT64),
             helper.make_node("Add", ["masked_l", "pad"], ["position_ids"]),
             helper.make_node("Gather", ["positions", "position_ids"], ["p"]),
             helper.make_node("Gather", ["words", "ids"], ["w"]),
             helper.make_node("Add", ["w", "p"], ["y"])]
    return make_model(nodes, [("ids", [1, 7], TensorProto.INT64)], [("y", None)],
                      [("pad", np.array(pad, np.int64)), ("axis", np.array(1, np.int64)),
                       ("positions", RNG.standard_normal((positions, 4)).astype(np.float32)),
                       ("words", RNG.standard_normal((vocab, 4)).astype(np.float32))])


def test_roberta_position_ids(tmp_path):
    check(roberta_embeddings(), tmp_path, {"ids": np.array([[0, 5, 8, 3, 2, 1, 1]], np.int64)})


def test_gather_elements_row_lookup(tmp_path):
    """A (1, P) constant read along its long axis at run-time indices: one row per index."""
    model = make_model([helper.make_node("Cast", ["x"], ["i"], to=TensorProto.INT64),
                        helper.make_node("GatherElements", ["buffer", "i"], ["y"], axis=1)],
                       [("x", [1, 6])], [("y", None)], [("buffer", TABLE.reshape(1, 15))])
    check(model, tmp_path, {"x": RNG.uniform(0, 14.99, (1, 6)).astype(np.float32)})


def test_table_with_inf_is_refused_in_one_line():
    table = TABLE.copy()
    table[2, 1] = np.inf
    model = make_model([helper.make_node("Cast", ["x"], ["i"], to=TensorProto.INT64),
                        helper.make_node("Gather", ["t", "i"], ["y"])], [("x", [1, 4])], [("y", None)], [("t", table)])
    with pytest.raises(ConversionError, match=r"^Gather node [^\n]*inf or NaN[^\n]*$"):
        convert(model)


def test_a_large_table_read_at_run_time_warns():
    table = np.zeros((5000, 2), np.float32)
    model = make_model([helper.make_node("Cast", ["x"], ["i"], to=TensorProto.INT64),
                        helper.make_node("Gather", ["t", "i"], ["y"])], [("x", [1, 3])], [("y", None)], [("t", table)])
    assert any("one-hot product" in w for w in convert(model).stats["warnings"])
