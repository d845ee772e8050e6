"""converter/onnx_side/cut.py on hand-built graphs: `--outputs` keeps what computes the tensors named; a refused
op splits the model into the head ncnn computes and a host tail (onnxruntime) that gives the same outputs;
an If on how many values a NonZero finds is called data, not a size."""
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from converter import convert
from converter.onnx_side.host_tail import rows_in_other_order
from converter.ir import ConversionError
from converter.onnx_side.cut import plan_cut, subgraph


def topk_model():
    """scores = sigmoid(x @ w); the best 3 (TopK, no ncnn layer) and their boxes (GatherElements on the
    indices), and the mean score (ncnn computes it)."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((8, 6)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["logits"]),
             helper.make_node("Sigmoid", ["logits"], ["scores"]),
             helper.make_node("ReduceMax", ["scores"], ["best"], axes=[2], keepdims=0),
             helper.make_node("ReduceMean", ["scores"], ["mean"], axes=[1, 2], keepdims=0),
             helper.make_node("TopK", ["best", "k"], ["top", "index"], axis=1, name="topk"),
             helper.make_node("Unsqueeze", ["index", "last"], ["index3"]),
             helper.make_node("Tile", ["index3", "reps"], ["index6"]),
             helper.make_node("GatherElements", ["scores", "index6"], ["rows"], axis=1)]
    graph = helper.make_graph(nodes, "topk", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 10, 8])],
                              [helper.make_tensor_value_info("rows", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("top", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("mean", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.array([3], np.int64), "k"),
                               numpy_helper.from_array(np.array([2], np.int64), "last"),
                               numpy_helper.from_array(np.array([1, 1, 6], np.int64), "reps")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def reference(model, feeds):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))


def test_the_cut_hands_over_floats_and_keeps_integer_arithmetic_in_the_tail():
    proto = onnx.shape_inference.infer_shapes(topk_model())
    cut = plan_cut(proto, ["top", "index"])
    assert cut.refused == ["topk"]
    assert cut.head_outputs == ["best", "scores", "mean"]      # mean: a model output ncnn computes
    assert cut.tail_outputs == ["rows", "top"]
    tail = subgraph(proto, cut.tail_outputs, ["best", "scores"])
    assert [i.name for i in tail.graph.input] == ["best", "scores"]
    assert {n.op_type for n in tail.graph.node} == {"TopK", "Unsqueeze", "Tile", "GatherElements"}


def test_host_tail_gives_the_whole_models_outputs():
    model = topk_model()
    with pytest.raises(ConversionError, match=r"TopK \('topk'\).*--outputs best,scores,mean"):
        convert(model)
    converted = convert(model, host_tail=True)
    assert [e["onnx"] for e in converted.io()["outputs"]] == ["best", "scores", "mean"]
    assert converted.tail.outputs == ["rows", "top", "mean"]
    x = np.random.default_rng(1).standard_normal((1, 10, 8)).astype(np.float32)
    got, want = converted.run({"x": x}), reference(model, {"x": x})
    assert list(got) == ["rows", "top", "mean"]
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6)


def test_outputs_converts_the_subgraph_and_refuses_unknown_names():
    converted = convert(topk_model(), outputs=["best", "mean"])
    assert converted.graph.outputs == ["best", "mean"] and converted.tail is None
    with pytest.raises(ConversionError, match="no tensor.*nope"):
        convert(topk_model(), outputs=["best", "nope"])


def test_rows_in_other_order_matches_rows_one_to_one_within_tolerance():
    want = np.array([[[1.0, 0.5], [2.0, 0.49999], [3.0, 0.2]]])
    assert rows_in_other_order(want[:, [1, 0, 2]], want, 1e-4, 1e-3) == 2
    assert rows_in_other_order(want, want, 1e-4, 1e-3) == 0
    other = want.copy()
    other[0, 0, 0] = 5.0        # a row onnxruntime has nowhere
    assert rows_in_other_order(other, want, 1e-4, 1e-3) is None
    twice = want[:, [1, 1, 2]]  # one of onnxruntime's rows twice, another missing
    assert rows_in_other_order(twice, want, 1e-4, 1e-3) is None


def test_if_on_a_count_of_values_is_refused_as_data():
    """cond = (number of x > 0.5) == 0, as torchvision's detectors test for no box left."""
    then_b = helper.make_graph([helper.make_node("Neg", ["x"], ["a"])], "t", [],
                               [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 4])])
    else_b = helper.make_graph([helper.make_node("Abs", ["x"], ["b"])], "e", [],
                               [helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 4])])
    nodes = [helper.make_node("Greater", ["x", "half"], ["over"]),
             helper.make_node("NonZero", ["over"], ["where"], name="count"),
             helper.make_node("Shape", ["where"], ["ws"]),
             helper.make_node("Gather", ["ws", "one"], ["n"], axis=0),
             helper.make_node("Equal", ["n", "zero"], ["none"]),
             helper.make_node("If", ["none"], ["y"], name="pick", then_branch=then_b, else_branch=else_b)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
                              [numpy_helper.from_array(np.array(0.5, np.float32), "half"),
                               numpy_helper.from_array(np.array(1, np.int64), "one"),
                               numpy_helper.from_array(np.array(0, np.int64), "zero")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(ConversionError) as refused:
        convert(model, input_shapes={"x": [1, 4]})
    message = str(refused.value)
    assert "If node 'pick'" in message and "depends on data" in message and "NonZero node 'count'" in message
    assert "--input-shape" not in message.replace("no --input-shape", "")
