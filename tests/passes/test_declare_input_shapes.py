"""declare_input_shapes: Input layers carry their extents (0=w 1=h 11=d 2=c) where the shape is known,
none where an extent is dynamic; the reader takes them for files without their .json."""
from onnx import helper

from converter import convert
from converter.ncnn_side.layout import declared_inputs
from onnx_cases import make_model


def _inputs(shapes):
    nodes = [helper.make_node("Relu", [f"x{i}"], [f"y{i}"]) for i in range(len(shapes))]
    model = make_model(nodes, [(f"x{i}", s) for i, s in enumerate(shapes)], [(f"y{i}", None) for i in range(len(shapes))])
    graph = convert(model).graph
    return {n.outputs[0]: n.params for n in graph.nodes.values() if n.op == "Input"}, graph


def test_each_rank_declares_w_h_d_c_and_a_dynamic_extent_declares_nothing():
    params, graph = _inputs([[1, 7], [1, 5, 7], [1, 3, 5, 7], [1, 2, 3, 5, 7], [1, 3, "h", 7]])
    assert params["x0"] == {0: 7}
    assert params["x1"] == {0: 7, 1: 5}
    assert params["x2"] == {0: 7, 1: 5, 2: 3}
    assert params["x3"] == {0: 7, 1: 5, 11: 3, 2: 2}
    assert params["x4"] == {}
    # read back as files without their .json are: the ONNX shape with a batch axis of 1
    shapes = {e["onnx"]: e["onnx_shape"] for e in declared_inputs(graph)["inputs"]}
    assert shapes["x2"] == [1, 3, 5, 7] and shapes["x3"] == [1, 2, 3, 5, 7] and shapes["x4"] is None
