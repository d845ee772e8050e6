"""Constant folding follows onnxruntime and never stops a conversion of a valid model."""
import importlib

import numpy as np
import pytest
from onnx import helper

from converter import convert
from converter.ir import ConversionError
from converter.onnx_side.loader import load_onnx
from passes.fold_constants import fold_constants
from tests.onnx_cases import check_in_ncnn, make_model, ncnn_layer_types

# the passes package re-exports the function under the module's name
fold_module = importlib.import_module("converter.rewrite.fold")


def gather_elements_model(width, axis, negative=False):
    """x + GatherElements(table, indices): tiny BERT gathers 32 of 512 position values this way."""
    rng = np.random.default_rng(width)
    table = rng.standard_normal((1, width)).astype(np.float32)
    indices = rng.integers(0, width, (1, 32)) - (width if negative else 0)
    if axis == 0:
        table, indices = table.T, indices.T
    node = helper.make_node("GatherElements", ["table", "indices"], ["picked"], axis=axis)
    add = helper.make_node("Add", ["x", "picked"], ["y"])
    shape = list(indices.shape)
    return make_model([node, add], [("x", shape)], [("y", shape)],
                      [("table", table), ("indices", indices.astype(np.int64))])


@pytest.mark.parametrize("width,axis,negative", [(512, 1, False), (512, 0, True), (8, 1, False)])
def test_gather_elements_folds_like_onnxruntime(tmp_path, width, axis, negative):
    """Regression: onnx's reference GatherElements raised 'cannot reshape array of size 1
    into shape (1,32)' on axes longer than 32, which stopped the conversion of tiny BERT."""
    converted = check_in_ncnn(gather_elements_model(width, axis, negative), tmp_path)
    assert "GatherElements" not in ncnn_layer_types(converted)


def test_a_fold_that_fails_leaves_the_node_for_lowering(tmp_path, monkeypatch):
    def broken(graph, node):
        raise ValueError("evaluator exploded")
    monkeypatch.setattr(fold_module, "_evaluate", broken)
    c = np.arange(6, dtype=np.float32).reshape(1, 6) - 3
    model = make_model([helper.make_node("Relu", ["c"], ["r"]), helper.make_node("Add", ["x", "r"], ["y"])],
                       [("x", [1, 6])], [("y", [1, 6])], [("c", c)])
    graph = load_onnx(model)
    stats = fold_constants(graph)
    assert [n.op for n in graph.topological()] == ["Relu", "Add"]
    assert "Relu node" in next(iter(stats["fold_failures"].values()))
    converted = check_in_ncnn(model, tmp_path)
    assert "ReLU" in ncnn_layer_types(converted)


def test_unfoldable_node_without_lowering_is_named(monkeypatch):
    def broken(graph, node):
        raise ValueError("evaluator exploded")
    monkeypatch.setattr(fold_module, "_evaluate", broken)
    c = np.ones((1, 4), np.float32)
    model = make_model([helper.make_node("Det", ["c"], ["d"]), helper.make_node("Add", ["x", "d"], ["y"])],
                       [("x", [1])], [("y", [1])], [("c", c.reshape(1, 2, 2))])
    with pytest.raises(ConversionError, match="unsupported ONNX ops.*Det \\('Det_0'\\)"):
        convert(model)


def test_known_extents_sliced_from_a_partly_known_shape(tmp_path):
    """Slice(Shape(q), -1) of q (1, T, 16) with T a run-time length is [16] (torch's sdpa scale 1 /
    sqrt(q.shape[-1]), GPT-2 through optimum): it folds, and one file runs at every T; a slice reading
    T stays (and the conversion asks for its size)."""
    from onnx import TensorProto
    from tests.onnx_cases import assert_one_file_many_sizes

    def scaled(start, end):
        nodes = [helper.make_node("Shape", ["q"], ["s"]), helper.make_node("Slice", ["s", "b", "e"], ["d"]),
                 helper.make_node("Cast", ["d"], ["f"], to=TensorProto.FLOAT),
                 helper.make_node("Sqrt", ["f"], ["r"]), helper.make_node("Div", ["q", "r"], ["y"])]
        inits = [("b", np.array([start], np.int64)), ("e", np.array([end], np.int64))]
        return make_model(nodes, [("q", [1, "T", 16])], [("y", None)], inits)
    converted = assert_one_file_many_sizes(scaled(-1, 2**63 - 1), tmp_path, [(3,), (9,)], dims=("T",))
    assert not {"Shape", "Slice"} & {n.op for n in converted.graph.topological()}
    with pytest.raises(ConversionError):
        convert(scaled(1, 2))
