"""If with a condition known at conversion time is inlined; other control flow is refused by name."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from converter import convert
from converter.ir import ConversionError
from tests.onnx_cases import (assert_matches_reference, ncnn_layer_types, random_inputs, run_converted_in_ncnn,
                              to_ncnn)

X_SHAPE = [1, 3, 4]


def branch(name, nodes, outputs, initializers=()):
    return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(o, TensorProto.FLOAT, X_SHAPE)
                                               for o in outputs],
                             [numpy_helper.from_array(v, n) for n, v in initializers])


def rate_model(nested=False):
    """y = If(sr == 16000) then (x * 2 + w) else (x - 1); the then branch reads x, w (outer) and its
    own initializer; `nested` adds an If inside on a static size of x."""
    w = np.arange(4, dtype=np.float32)
    then_nodes = [helper.make_node("Mul", ["x", "two"], ["t"], name="scale"),
                  helper.make_node("Add", ["t", "w"], ["then_y"], name="shift")]
    then_inits = [("two", np.array(2, np.float32))]
    if nested:
        inner_then = branch("inner_then", [helper.make_node("Neg", ["then_y"], ["neg"], name="scale")], ["neg"])
        inner_else = branch("inner_else", [helper.make_node("Abs", ["then_y"], ["abs"])], ["abs"])
        then_nodes += [helper.make_node("Shape", ["x"], ["xs"]),
                       helper.make_node("Gather", ["xs", "last"], ["xw"], axis=0),
                       helper.make_node("Equal", ["xw", "four"], ["is4"]),
                       helper.make_node("If", ["is4"], ["then_out"], then_branch=inner_then,
                                        else_branch=inner_else)]
        then_inits += [("last", np.array(2, np.int64)), ("four", np.array(4, np.int64))]
    then_out = "then_out" if nested else "then_y"
    else_nodes = [helper.make_node("Sub", ["x", "one"], ["else_y"], name="scale")]
    nodes = [helper.make_node("Equal", ["sr", "rate"], ["is_16k"]),
             helper.make_node("If", ["is_16k"], ["y"], name="pick",
                              then_branch=branch("then", then_nodes, [then_out], then_inits),
                              else_branch=branch("else", else_nodes, ["else_y"], [("one", np.array(1, np.float32))])),
             helper.make_node("Relu", ["y"], ["out"])]
    graph = helper.make_graph(
        nodes, "rate",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, X_SHAPE),
         helper.make_tensor_value_info("sr", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, X_SHAPE)],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.array(16000, np.int64), "rate")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("sr", [16000, 8000])
@pytest.mark.parametrize("nested", [False, True])
def test_if_on_a_fixed_input_is_inlined(tmp_path, sr, nested):
    model = rate_model(nested)
    feeds = {"x": random_inputs(model)["x"]}
    converted, outputs = run_converted_in_ncnn(model, feeds, tmp_path, input_values={"sr": sr})
    assert_matches_reference(model, {**feeds, "sr": np.array(sr, np.int64)}, outputs)
    assert converted.stats["ifs_inlined"] == (2 if nested and sr == 16000 else 1)
    assert [e["onnx"] for e in converted.io()["inputs"]] == ["x"]
    assert "If" not in ncnn_layer_types(converted)


def test_branch_node_names_that_clash_are_made_unique(tmp_path):
    """ONNX keeps tensor names unique across scopes, but not node names: both have a 'scale'."""
    model = rate_model()
    model.graph.node.insert(0, helper.make_node("Identity", ["x"], ["x_copy"], name="scale"))
    feeds = {"x": random_inputs(model)["x"]}
    _, outputs = run_converted_in_ncnn(model, feeds, tmp_path, input_values={"sr": 16000})
    assert_matches_reference(model, {**feeds, "sr": np.array(16000, np.int64)}, outputs)


@pytest.mark.parametrize("nested", [False, True])
def test_if_on_a_run_time_value_computes_both_branches_and_selects(tmp_path, nested):
    """Both branches give [1, 3, 4]: one file serves either value of sr."""
    model = rate_model(nested)
    x = random_inputs(model)["x"]
    for sr in (16000, 8000):
        feeds = {"x": x, "sr": np.array(sr, np.int64)}
        converted, outputs = run_converted_in_ncnn(model, feeds, tmp_path)
        assert_matches_reference(model, feeds, outputs)
        ours = converted.run({e["ncnn"]: to_ncnn(feeds[e["onnx"]], e) for e in converted.io()["inputs"]}, layout="ncnn")
        assert_matches_reference(model, feeds, {e["onnx"]: ours[e["ncnn"]] for e in converted.io()["outputs"]})
    assert "If" not in ncnn_layer_types(converted)


def unequal_rate_model():
    """rate_model whose else branch gives [1, 3, 1] (a ReduceMax), not [1, 3, 4]."""
    model = rate_model()
    reduce = helper.make_node("ReduceMax", ["x"], ["else_y"], keepdims=1, axes=[2], name="scale")
    else_branch = next(a.g for a in model.graph.node[1].attribute if a.name == "else_branch")
    else_branch.node[0].CopyFrom(reduce)
    else_branch.output[0].type.tensor_type.shape.dim[2].dim_value = 1
    return model


def test_if_on_a_run_time_value_with_unequal_branches_is_refused_naming_the_input():
    model = unequal_rate_model()
    with pytest.raises(ConversionError, match="If node 'pick' .*value of input\\(s\\) sr.*--input-value sr=VALUE"
                                              ".*equal shapes, got \\[1, 3, 4\\] and \\[1, 3, 1\\]"):
        convert(model)


def test_if_on_an_unknown_size_is_refused_naming_the_input():
    model = rate_model(nested=True)
    model.graph.input[0].type.tensor_type.shape.dim[2].Clear()
    model.graph.input[0].type.tensor_type.shape.dim[2].dim_param = "W"
    with pytest.raises(ConversionError, match="If node .*size of input\\(s\\) x.*--input-shape x=DIMS"):
        convert(model, input_values={"sr": 16000})


def test_loop_is_refused_by_name():
    """A trip count fed at run time (a constant one unrolls: passes/unroll_loops.py)."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]), helper.make_node("Add", ["acc", "x"], ["acc_out"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("acc", TensorProto.FLOAT, X_SHAPE)],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, X_SHAPE)])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["n", "", "x"], ["y"], name="repeat", body=body)], "loop",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, X_SHAPE),
         helper.make_tensor_value_info("n", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, X_SHAPE)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    with pytest.raises(ConversionError, match="Loop node 'repeat'"):
        convert(model)


def test_input_value_must_fit_the_input():
    with pytest.raises(ConversionError, match="--input-value sr: 2 value"):
        convert(rate_model(), input_values={"sr": [1, 2]})
    with pytest.raises(ConversionError, match="--input-value names unknown input"):
        convert(rate_model(), input_values={"rate_hz": 1})


def test_no_control_flow_means_no_work():
    from converter.onnx_side.loader import load_onnx
    from passes.inline_if import inline_if
    model = rate_model()
    model.graph.node[1].CopyFrom(helper.make_node("Identity", ["x"], ["y"]))
    assert inline_if(load_onnx(model)) == {}
    onnx.checker.check_model(model)


def shape_decided_model():
    """The If reads a size of a Reshape whose target shape onnx's load-time inference cannot see
    (it comes through Neg); it is known once folding made the shape a constant."""
    then_branch = branch("then", [helper.make_node("Mul", ["r", "r"], ["sq"])], ["sq"])
    else_branch = branch("else", [helper.make_node("Neg", ["r"], ["ng"])], ["ng"])
    nodes = [helper.make_node("Neg", ["negated_shape"], ["shape"]),
             helper.make_node("Reshape", ["x", "shape"], ["r"]),
             helper.make_node("Shape", ["r"], ["rs"]),
             helper.make_node("Gather", ["rs", "one"], ["rows"], axis=0),
             helper.make_node("Equal", ["rows", "three"], ["is3"]),
             helper.make_node("If", ["is3"], ["y"], name="by_size", then_branch=then_branch,
                              else_branch=else_branch)]
    graph = helper.make_graph(
        nodes, "sized", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 12])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, X_SHAPE)],
        [numpy_helper.from_array(np.array([-1, -3, -4], np.int64), "negated_shape"),
         numpy_helper.from_array(np.array(1, np.int64), "one"),
         numpy_helper.from_array(np.array(3, np.int64), "three")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def test_if_on_a_size_known_after_folding_is_inlined(tmp_path):
    from converter.onnx_side.loader import load_onnx
    model = shape_decided_model()
    assert load_onnx(model).tensors["r"].shape is None      # what makes this case hard
    feeds = random_inputs(model)
    converted, outputs = run_converted_in_ncnn(model, feeds, tmp_path)
    assert_matches_reference(model, feeds, outputs)
    assert converted.stats["ifs_inlined"] == 1


@pytest.mark.parametrize("value", [np.inf, np.nan])
def test_if_on_a_run_time_value_with_a_non_finite_branch_constant_is_refused(value):
    """Selecting computes c * then + (1 - c) * else: an inf in the branch not taken would make NaN."""
    model = rate_model()
    then_branch = next(a.g for a in model.graph.node[1].attribute if a.name == "then_branch")
    then_branch.initializer[0].CopyFrom(numpy_helper.from_array(np.array(value, np.float32), "two"))
    with pytest.raises(ConversionError, match="If node 'pick' .*needs finite branch values, but node 'scale' "
                                              "reads constant 'two\\w*', which holds inf or NaN"):
        convert(model)
    convert(model, input_values={"sr": 8000})       # a fixed condition keeps only the branch taken


def test_if_on_image_data_does_not_suggest_fixing_the_image():
    """--input-value helps for a setting such as a sample rate, not for an image: no such hint."""
    model = unequal_rate_model()
    graph = model.graph
    graph.node[0].CopyFrom(helper.make_node("ReduceMax", ["x"], ["peak"], keepdims=0))
    graph.node.insert(1, helper.make_node("Greater", ["peak", "zero"], ["is_16k"]))
    graph.initializer.append(numpy_helper.from_array(np.array(0, np.float32), "zero"))
    del graph.input[1]
    with pytest.raises(ConversionError, match="value of input\\(s\\) x; computing both") as info:
        convert(model)
    assert "--input-value" not in str(info.value)
