"""The Softmax NaN guard Where(IsNaN(p), 0, p) after a -inf mask: rewritten to finite arithmetic
(passes/rewrite_softmax_nan_guard.py). Real ncnn and the interpreter against onnxruntime,
fully masked rows (zeros, not NaN) included; other IsNaN uses refused in one line."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from converter import convert
from converter.ir import ConversionError
from onnx_cases import make_model, onnxruntime_outputs, random_inputs, run_converted_in_ncnn, to_ncnn

FLT_MIN = np.finfo(np.float32).min


def guarded_model(fill: float, axis: int = -1, shape=(1, 2, 4, 4)):
    """scores + Where(keep, 0, fill) -> Softmax -> Where(IsNaN(p), 0, p); keep is a 0/1 input."""
    mask_shape = [1] * len(shape)
    mask_shape[axis] = shape[axis]
    nodes = [helper.make_node("Cast", ["keep"], ["keep_b"], to=TensorProto.BOOL),
             helper.make_node("Where", ["keep_b", "zero", "fill"], ["bias"]),
             helper.make_node("Add", ["x", "bias"], ["z"]),
             helper.make_node("Softmax", ["z"], ["p"], axis=axis),
             helper.make_node("IsNaN", ["p"], ["nan"]),
             helper.make_node("Where", ["nan", "zero", "p"], ["y"])]
    return make_model(nodes, [("x", list(shape)), ("keep", mask_shape, TensorProto.INT64)], [("y", None)],
                      [("fill", np.array(fill, np.float32)), ("zero", np.array(0, np.float32))])


@pytest.mark.parametrize("fill", [-np.inf, FLT_MIN])
@pytest.mark.parametrize("keep", [[1, 0, 1, 1], [0, 0, 0, 0], [0, 0, 0, 1], [1, 1, 1, 1]])
@pytest.mark.parametrize("axis", [-1, 2])
def test_guarded_softmax(tmp_path, fill, keep, axis):
    model = guarded_model(fill, axis)
    feeds = random_inputs(model)
    feeds["keep"] = np.array(keep, np.int64).reshape(feeds["keep"].shape)
    want = onnxruntime_outputs(model, feeds)["y"]
    assert not np.isnan(want).any()
    converted, outputs = run_converted_in_ncnn(model, feeds, tmp_path)
    assert converted.stats["softmax_nan_guards"] == 1
    io = converted.io()
    ours = converted.run({e["ncnn"]: to_ncnn(feeds[e["onnx"]], e) for e in io["inputs"]}, layout="ncnn")[io["outputs"][0]["ncnn"]]
    for got in (outputs["y"], ours):
        np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-5, atol=1e-6)


def test_softmax_also_read_elsewhere_stays(tmp_path):
    """The unguarded Softmax output is a graph output too: it stays, the guard is rewritten."""
    model = guarded_model(-np.inf)
    model.graph.output.append(helper.make_tensor_value_info("p", TensorProto.FLOAT, [1, 2, 4, 4]))
    feeds = random_inputs(model)
    feeds["keep"] = np.array([1, 0, 1, 0], np.int64).reshape(feeds["keep"].shape)
    converted, outputs = run_converted_in_ncnn(model, feeds, tmp_path)
    assert converted.stats["softmax_nan_guards"] == 1
    for name, want in onnxruntime_outputs(model, feeds).items():
        np.testing.assert_allclose(outputs[name].reshape(want.shape), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("nodes", [
    [helper.make_node("IsNaN", ["x"], ["n"]), helper.make_node("Where", ["n", "zero", "x"], ["y"])],  # no Softmax
    [helper.make_node("Softmax", ["x"], ["p"]), helper.make_node("IsNaN", ["p"], ["n"]),
     helper.make_node("Where", ["n", "one", "p"], ["y"])],                                              # not 0
])
def test_other_nan_replacing_wheres_are_refused_in_one_line(nodes):
    """IsNaN itself is exact in ncnn (lowering/isnan.py), but a Where replacing the NaNs it finds is not."""
    model = make_model(nodes, [("x", [1, 3, 4])], [("y", None)],
                       [("zero", np.array(0, np.float32)), ("one", np.array(1, np.float32))])
    with pytest.raises(ConversionError, match=r"^IsNaN node [^\n]*replaces the NaNs[^\n]*$"):
        convert(model)


def test_isnan_read_as_data_converts(tmp_path):
    nodes = [helper.make_node("Softmax", ["x"], ["p"]), helper.make_node("IsNaN", ["p"], ["n"]),
             helper.make_node("Cast", ["n"], ["y"], to=TensorProto.FLOAT)]
    model = make_model(nodes, [("x", [1, 3, 4])], [("y", None)])
    feeds = random_inputs(model)
    _, outputs = run_converted_in_ncnn(model, feeds, tmp_path)
    want = onnxruntime_outputs(model, feeds)["y"]
    np.testing.assert_array_equal(outputs["y"].reshape(want.shape), want)
