"""The broadcast pass: fires exactly where ncnn's rule differs from numpy's, and the results match."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from converter import convert
from converter.ir import Tensor
from onnx_cases import MODELS, assert_matches_reference, make_model, onnxruntime_outputs, \
    random_inputs, run_converted_in_ncnn
from passes.fix_broadcast import insert_ones_params, numpy_target
from scripts.broadcast_chain import broadcast_chain


def layer_types(model):
    return [n.op for n in model.graph.topological()]


def binary_model(a_shape, b_shape, b_const, a_name="x"):
    node = helper.make_node("Add", [a_name, "b"], ["y"])
    out = list(np.broadcast_shapes(tuple(a_shape), tuple(b_shape)))
    inputs = [(a_name, a_shape)] + ([] if b_const else [("b", b_shape)])
    inits = [("b", np.linspace(-1, 1, int(np.prod(b_shape))).reshape(b_shape).astype(np.float32))] \
        if b_const else []
    return make_model([node], inputs, [("y", out)], inits)


def test_nothing_inserted_when_ranks_agree():
    converted = convert(binary_model([1, 4, 3, 2], [1, 4, 1, 2], b_const=False))
    assert converted.stats["reshapes_inserted"] == 0
    assert layer_types(converted).count("Reshape") == 0


def test_constant_is_reshaped_in_place_without_a_layer():
    converted = convert(binary_model([1, 4, 3, 2], [2], b_const=True))
    assert converted.stats["reshapes_inserted"] == 0
    assert sorted(layer_types(converted)) == ["BinaryOp", "Input", "MemoryData"]
    data = next(n for n in converted.graph.nodes.values() if n.op == "MemoryData")
    assert data.params == {0: 2, 1: 1, 2: 1}       # [w=2, h=1, c=1]: numpy's trailing alignment


def test_dynamic_operand_gets_one_reshape(tmp_path):
    model = binary_model([1, 4, 3, 2], [3, 2], b_const=False)
    converted = convert(model)
    assert converted.stats["reshapes_inserted"] == 1
    assert layer_types(converted).count("Reshape") == 1
    feeds = random_inputs(model)
    _, outputs = run_converted_in_ncnn(model, feeds, tmp_path)
    assert_matches_reference(model, feeds, outputs)


def test_numpy_target_drops_the_result_batch_axis():
    result = Tensor("r", (1, 4, 3, 2), batch_axis=0)
    assert numpy_target(Tensor("b", (3, 2)), result) == (1, 3, 2)
    assert numpy_target(Tensor("b", (4, 1, 1)), result) == (4, 1, 1)
    no_batch = Tensor("r", (5, 4, 3), batch_axis=None)
    assert numpy_target(Tensor("a", (1, 4, 3), batch_axis=0), no_batch) == (1, 4, 3)


def test_reshape_params_use_copy_and_infer_codes_for_unknown_extents():
    assert insert_ones_params((None,), (1, 1, None)) == {0: 0, 1: 1, 2: 1}
    assert insert_ones_params((None, None), (1, None, None)) == {0: 0, 1: 0, 2: 1}
    assert insert_ones_params((3, None), (3, 1, None)) == {0: 0, 1: 1, 2: 3}
    assert insert_ones_params((None, 5), (None, 1, 5)) == {0: 5, 1: 1, 2: -1}
    assert insert_ones_params((None, None), (None, 1, None)) == {0: 0, 1: 1, 2: -1}
    with pytest.raises(ValueError):      # two unknowns move to differently named axes
        insert_ones_params((None, None, None), (None, None, None, 1))


def dynamic_model():
    """x (1,C,H,W) with symbolic H, W; w ('W',) and a per-W constant: the ncnn rule would misalign both."""
    nodes = [helper.make_node("Add", ["x", "w"], ["s"]), helper.make_node("Mul", ["s", "k"], ["y"])]
    graph = helper.make_graph(
        nodes, "dyn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "H", "W"]),
         helper.make_tensor_value_info("w", TensorProto.FLOAT, ["W"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, "H", "W"])],
        [helper.make_tensor("k", TensorProto.FLOAT, [3, 1, 1], [0.5, -1.0, 2.0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("h, w", [(3, 3), (5, 7), (8, 2)])
def test_dynamic_extents_run_at_several_sizes(tmp_path, h, w):
    model = dynamic_model()
    feeds = random_inputs(model, dims={"H": h, "W": w})
    _, outputs = run_converted_in_ncnn(model, feeds, tmp_path)
    assert_matches_reference(model, feeds, outputs)


def test_naive_conversion_of_the_demo_is_wrong_in_real_ncnn(tmp_path):
    """Without the pass the files load and run but compute other numbers: the reason this project exists."""
    import onnx
    model = onnx.load(str(MODELS / "bcast_demo.onnx"))
    feeds = random_inputs(model)
    expected = onnxruntime_outputs(model, feeds)
    _, naive = run_converted_in_ncnn(model, feeds, tmp_path, broadcast_fix=False)
    for name, want in expected.items():
        got = naive[name]
        wrong = got.size != want.size or not np.allclose(got.reshape(want.shape), want, rtol=1e-3, atol=1e-4)
        assert wrong, f"{name}: the naive conversion happened to be right"
    _, fixed = run_converted_in_ncnn(model, feeds, tmp_path)
    assert_matches_reference(model, feeds, fixed)


def test_twenty_thousand_broadcast_nodes(tmp_path):
    n = 20000
    model = broadcast_chain(n)
    feeds = random_inputs(model, low=0.5, high=1.5)
    converted, outputs = run_converted_in_ncnn(model, feeds, tmp_path)
    graph = converted.graph
    binaries = [node for node in graph.nodes.values() if node.op == "BinaryOp"]
    assert len(binaries) == n
    for node in binaries:
        ranks = {len(graph.tensors[t].ncnn_shape) for t in node.inputs}
        assert ranks == {3}, node.name
    assert converted.stats["reshapes_inserted"] == 1       # the shared 2-D input, reshaped once
    assert_matches_reference(model, feeds, outputs)
