"""Split insertion: every blob read twice goes through Split, including graph outputs read by layers."""
import numpy as np
import pytest
from onnx import helper

from converter import convert
from onnx_cases import assert_matches_reference, make_model, random_inputs, run_converted_in_ncnn


def test_same_tensor_twice_in_one_node(tmp_path):
    model = make_model([helper.make_node("Mul", ["x", "x"], ["y"])], [("x", [1, 3, 4])], [("y", [1, 3, 4])])
    converted = convert(model)
    splits = [n for n in converted.graph.nodes.values() if n.op == "Split"]
    assert len(splits) == 1 and len(splits[0].outputs) == 2
    feeds = random_inputs(model)
    _, outputs = run_converted_in_ncnn(model, feeds, tmp_path)
    assert_matches_reference(model, feeds, outputs)


@pytest.mark.parametrize("order", [("r", "y"), ("y", "r")])
def test_graph_output_also_read_by_a_layer(tmp_path, order):
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Add", ["r", "x"], ["y"])]
    model = make_model(nodes, [("x", [1, 3, 4])], [(name, [1, 3, 4]) for name in order])
    converted = convert(model)
    assert converted.graph.producer("r").op == "Split"     # the output name is a Split branch
    feeds = random_inputs(model)
    _, outputs = run_converted_in_ncnn(model, feeds, tmp_path)
    assert_matches_reference(model, feeds, outputs)


def test_no_split_for_single_readers():
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Mul", ["r", "k"], ["y"])]
    model = make_model(nodes, [("x", [1, 3, 4])], [("y", [1, 3, 4])], [("k", np.float32(2))])
    assert not [n for n in convert(model).graph.nodes.values() if n.op == "Split"]
