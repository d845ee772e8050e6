"""Positions along an axis of run-time length (lowering/runtime_positions.py): ArgMax/ArgMin over a
run-time sequence and one-hot row lookups in a run-time-length table (CLIP's pooling at the argmax of
its ids), one converted file checked at several lengths in real ncnn and the interpreter."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from converter import ConversionError, convert
from onnx_cases import assert_one_file_many_sizes, make_model, ncnn_layer_types

LENGTHS = [(5,), (8,), (16,), (33,)]
D = 6


def ids_model(nodes, outputs, initializers=(), hidden=False):
    """ids (1, S) int64 in 0..2 (many ties), optionally a hidden state (1, S, D)."""
    inputs = [("ids", [1, "S"], TensorProto.INT64)] + ([("h", [1, "S", D])] if hidden else [])
    cast = helper.make_node("Cast", ["ids"], ["x"], to=TensorProto.FLOAT)
    return make_model([cast, *nodes], inputs, [(o, None) for o in outputs], initializers, opset=13)


def arg_node(op, keepdims, last, out="y"):
    return helper.make_node(op, ["x"], [out], axis=-1, keepdims=keepdims, select_last_index=last)


@pytest.mark.parametrize("op,keepdims,last", [("ArgMax", 0, 0), ("ArgMax", 1, 1), ("ArgMin", 1, 0),
                                              ("ArgMin", 0, 1)], ids=str)
def test_arg_extreme_over_a_run_time_axis(op, keepdims, last, tmp_path):
    model = ids_model([arg_node(op, keepdims, last, "i"), helper.make_node("Cast", ["i"], ["y"], to=TensorProto.FLOAT)],
                      ["y"])
    converted = assert_one_file_many_sizes(model, tmp_path, LENGTHS, dims=("S",))
    assert "CumulativeSum" in ncnn_layer_types(converted)        # the positions are built at run time


def pooling_gather_nd():
    """torch.export's CLIP pooling: hidden[arange(1), ids.argmax(-1)] as GatherND at (0, argmax)."""
    return [arg_node("ArgMax", 0, 0, "i"),
            helper.make_node("Unsqueeze", ["i", "last"], ["col"]),
            helper.make_node("Concat", ["zero", "col"], ["at"], axis=-1),
            helper.make_node("GatherND", ["h", "at"], ["y"])], \
        [("last", np.array([-1], np.int64)), ("zero", np.zeros((1, 1), np.int64))]


def pooling_gather(shift):
    """The TorchScript exporter's form: the flattened hidden state read at argmax (+ shift, negative
    indices count from the end of the run-time length)."""
    return [arg_node("ArgMax", 0, 0, "i"),
            helper.make_node("Add", ["i", "shift"], ["at"]),
            helper.make_node("Reshape", ["h", "rows"], ["flat"]),
            helper.make_node("Gather", ["flat", "at"], ["y"], axis=0)], \
        [("shift", np.array([shift], np.int64)), ("rows", np.array([-1, D], np.int64))]


@pytest.mark.parametrize("form", ["gather_nd", "gather", "gather_negative"])
def test_lookup_in_a_run_time_length_table(form, tmp_path):
    nodes, inits = {"gather_nd": pooling_gather_nd, "gather": lambda: pooling_gather(0),
                    "gather_negative": lambda: pooling_gather(-4)}[form]()
    model = ids_model(nodes, ["y"], inits, hidden=True)
    converted = assert_one_file_many_sizes(model, tmp_path, LENGTHS, dims=("S",))
    types = ncnn_layer_types(converted)
    assert "MatMul" in types and types.count("CumulativeSum") == 2, types    # argmax and one-hot positions


def test_a_run_time_extent_not_the_rows_is_refused():
    """Depth 1 into (1, S, D): each index picks an (S, D) block, a run-time width the one-hot
    product cannot have; it refuses in one line naming the node."""
    nodes = [arg_node("ArgMax", 1, 0, "i"), helper.make_node("Mul", ["i", "zero"], ["at"]),
             helper.make_node("GatherND", ["h", "at"], ["y"])]
    model = ids_model(nodes, ["y"], [("zero", np.zeros((1, 1), np.int64))], hidden=True)
    with pytest.raises(ConversionError, match=r"^GatherND node [^\n]*unknown extents[^\n]*$"):
        convert(model)


@pytest.mark.parametrize("full_like", ["ConstantOfShape", "Expand"])
def test_lookup_at_a_run_time_grid_of_integer_positions(full_like, tmp_path):
    """T5's shape of the problem: |j - i| on an (S, S) integer grid, capped by an integer fill of the
    grid's run-time shape (either exporter's full_like), read from a constant table."""
    rows = 4
    cap = (helper.make_node("ConstantOfShape", ["grid_shape"], ["cap"],
                            value=helper.make_tensor("v", TensorProto.INT64, [1], [rows - 1]))
           if full_like == "ConstantOfShape" else helper.make_node("Expand", ["top", "grid_shape"], ["cap"]))
    nodes = [helper.make_node("Shape", ["ids"], ["shape"]),
             helper.make_node("Gather", ["shape", "one"], ["s"], axis=0),
             helper.make_node("Range", ["zero", "s", "one"], ["pos"]),
             helper.make_node("Unsqueeze", ["pos", "first"], ["row"]),
             helper.make_node("Unsqueeze", ["pos", "last"], ["col"]),
             helper.make_node("Sub", ["row", "col"], ["rel"]),
             helper.make_node("Abs", ["rel"], ["n"]),
             helper.make_node("Shape", ["n"], ["grid_shape"]), cap,
             helper.make_node("Min", ["n", "cap"], ["bucket"]),
             helper.make_node("Gather", ["table", "bucket"], ["y"], axis=0)]
    table = np.random.default_rng(0).normal(size=(rows, 3)).astype(np.float32)
    inits = [("one", np.array(1, np.int64)), ("zero", np.array(0, np.int64)), ("first", np.array([0], np.int64)),
             ("last", np.array([1], np.int64)), ("top", np.array(rows - 1, np.int64)), ("table", table)]
    model = make_model(nodes,
                       [("ids", [1, "S"], TensorProto.INT64)], [("y", None)], inits, opset=13)
    converted = assert_one_file_many_sizes(model, tmp_path, LENGTHS, dims=("S",))
    types = ncnn_layer_types(converted)
    assert "Gemm" in types and types[-1] == "Reshape", types      # the one-hot rows times the table, put back in (S, S)
