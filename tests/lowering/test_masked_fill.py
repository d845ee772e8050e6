"""Where with a constant +-inf branch (masked_fill(-inf): padding and causal masks before Softmax):
the finite branch plus an inf-or-0 term that never multiplies inf by 0. Real ncnn and the
interpreter against onnxruntime."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from converter import convert
from converter.ir import ConversionError
from onnx_cases import check_in_ncnn, make_model, onnxruntime_outputs, random_inputs, run_converted_in_ncnn, to_ncnn

NEG_INF = np.array(-np.inf, np.float32)
CAUSAL = np.triu(np.ones((4, 4), bool), 1)


def padding_mask_model(then_inf: bool):
    """scores + Where(keep, 0, -inf) (torch's SDPA bool mask) or Where(masked, -inf, scores)."""
    nodes = [helper.make_node("Cast", ["keep"], ["keep_b"], to=TensorProto.BOOL)]
    if then_inf:
        nodes += [helper.make_node("Not", ["keep_b"], ["masked"]),
                  helper.make_node("Where", ["masked", "ninf", "x"], ["filled"])]
    else:
        nodes += [helper.make_node("Where", ["keep_b", "zero", "ninf"], ["bias"]),
                  helper.make_node("Add", ["x", "bias"], ["filled"])]
    nodes.append(helper.make_node("Softmax", ["filled"], ["y"], axis=-1))
    return make_model(nodes, [("x", [1, 2, 4, 4]), ("keep", [1, 1, 1, 4], TensorProto.INT64)], [("y", None)],
                      [("ninf", NEG_INF), ("zero", np.array(0, np.float32))])


def feeds_with_mask(model, keep):
    feeds = random_inputs(model)
    feeds["keep"] = np.array(keep, np.int64).reshape(1, 1, 1, 4)
    return feeds


@pytest.mark.parametrize("then_inf", [True, False])
@pytest.mark.parametrize("keep", [[1, 1, 0, 1], [1, 0, 0, 0], [1, 1, 1, 1]])
def test_padding_mask_with_inf(tmp_path, then_inf, keep):
    model = padding_mask_model(then_inf)
    feeds = feeds_with_mask(model, keep)
    converted = check_in_ncnn(model, tmp_path, feeds=feeds)
    io = converted.io()
    ours = converted.run({e["ncnn"]: to_ncnn(feeds[e["onnx"]], e) for e in io["inputs"]}, layout="ncnn")
    want = onnxruntime_outputs(model, feeds)["y"]
    np.testing.assert_allclose(ours[io["outputs"][0]["ncnn"]].reshape(want.shape), want, rtol=1e-5, atol=1e-6)


def test_fully_masked_row_is_nan_on_both_sides(tmp_path):
    """Softmax of an all -inf row is NaN in onnxruntime and in ncnn: the same answer."""
    model = padding_mask_model(True)
    feeds = feeds_with_mask(model, [0, 0, 0, 0])
    _, outputs = run_converted_in_ncnn(model, feeds, tmp_path)
    assert np.isnan(outputs["y"]).all() and np.isnan(onnxruntime_outputs(model, feeds)["y"]).all()


@pytest.mark.parametrize("inf", [-np.inf, np.inf])
@pytest.mark.parametrize("then_inf", [True, False])
def test_constant_causal_mask(tmp_path, inf, then_inf):
    cond = CAUSAL if then_inf else ~CAUSAL
    branches = ["fill", "x"] if then_inf else ["x", "fill"]
    model = make_model([helper.make_node("Where", ["c", *branches], ["y"])], [("x", [1, 2, 4, 4])], [("y", None)],
                       [("c", cond), ("fill", np.array(inf, np.float32))])
    check_in_ncnn(model, tmp_path)


def test_runtime_condition_and_runtime_value(tmp_path):
    """c a run-time 0/1, the finite branch a run-time tensor of a wider shape than c."""
    model = make_model([helper.make_node("Cast", ["m"], ["c"], to=TensorProto.BOOL),
                        helper.make_node("Where", ["c", "x", "fill"], ["y"])],
                       [("x", [1, 3, 4]), ("m", [1, 1, 4])], [("y", None)], [("fill", NEG_INF)])
    feeds = random_inputs(model)
    feeds["m"] = np.array([[[1, 0, 1, 0]]], np.float32)
    check_in_ncnn(model, tmp_path, feeds=feeds)


def test_inf_on_both_branches_is_refused():
    model = make_model([helper.make_node("Cast", ["m"], ["c"], to=TensorProto.BOOL),
                        helper.make_node("Where", ["c", "pinf", "ninf"], ["y"])],
                       [("m", [1, 4])], [("y", None)],
                       [("pinf", np.array(np.inf, np.float32)), ("ninf", NEG_INF)])
    with pytest.raises(ConversionError, match=r"^Where node .*both branches are infinite[^\n]*$"):
        convert(model)


def test_mixed_inf_constant_is_still_refused():
    model = make_model([helper.make_node("Cast", ["m"], ["c"], to=TensorProto.BOOL),
                        helper.make_node("Where", ["c", "fill", "x"], ["y"])],
                       [("m", [1, 2]), ("x", [1, 2])], [("y", None)],
                       [("fill", np.array([-np.inf, 0.0], np.float32))])
    with pytest.raises(ConversionError, match="inf or NaN"):
        convert(model)
