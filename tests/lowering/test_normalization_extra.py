"""LogSoftmax, LpNormalization, MeanVarianceNormalization in real ncnn against onnxruntime."""
import numpy as np
import pytest
from onnx import helper

from converter import ConversionError
from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model, random_inputs


def one_node(op, x_shape, opset=13, **attrs):
    # shape inference leaves MeanVarianceNormalization (a function op) unshaped: the output is x's shape
    return make_model([helper.make_node(op, ["x"], ["y"], **attrs)], [("x", x_shape)], [("y", x_shape)],
                      opset=opset)


def check_both(model, tmp_path, feeds=None):
    converted = check_in_ncnn(model, tmp_path, feeds)
    check_interpreter_matches_ncnn(converted, model, tmp_path)
    return converted


AXES = [((1, 3, 4, 5), -1), ((1, 3, 4, 5), 1), ((1, 3, 4, 5), 2), ((1, 6, 7), 1), ((1, 9), -1),
        ((3, 4), 0), ((2, 3, 4, 5), 0), ((1, 2, 3, 4, 5), 2)]


@pytest.mark.parametrize("x_shape,axis", AXES, ids=str)
def test_log_softmax(x_shape, axis, tmp_path):
    model = one_node("LogSoftmax", x_shape, axis=axis)
    check_both(model, tmp_path, random_inputs(model, low=-10, high=10))


def test_log_softmax_far_below_the_max(tmp_path):
    """Where log(Softmax) would be log(0) = -inf: values 150 below the row's max."""
    model = one_node("LogSoftmax", (1, 2, 6), axis=-1)
    x = np.array([[[0, -50, -120, -150, -200, 3], [80, -80, 0, 1, 2, -300]]], np.float32)
    check_both(model, tmp_path, {"x": x})


@pytest.mark.parametrize("axis", [1, 2, None])
def test_log_softmax_opset11_flattens_trailing_axes(axis, tmp_path):
    model = one_node("LogSoftmax", (1, 3, 4, 5), opset=11, **({} if axis is None else {"axis": axis}))
    check_both(model, tmp_path)


def test_log_softmax_along_batch_axis_is_refused(tmp_path):
    with pytest.raises(ConversionError, match=r"LogSoftmax node .*batch axis"):
        check_in_ncnn(one_node("LogSoftmax", (1, 3, 4), axis=0), tmp_path)


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("x_shape,axis", AXES, ids=str)
def test_lp_normalization(x_shape, axis, p, tmp_path):
    check_both(one_node("LpNormalization", x_shape, axis=axis, p=p), tmp_path)


@pytest.mark.parametrize("p", [1, 2])
def test_lp_normalization_of_a_zero_vector_is_zero(p, tmp_path):
    model = one_node("LpNormalization", (1, 3, 4), axis=-1, p=p)
    x = random_inputs(model)["x"]
    x[0, 1] = 0
    check_both(model, tmp_path, {"x": x})


def test_lp_normalization_p3_is_refused(tmp_path):
    with pytest.raises(ConversionError, match=r"LpNormalization node .*p=3"):
        check_in_ncnn(one_node("LpNormalization", (1, 3, 4), p=3), tmp_path)


@pytest.mark.parametrize("x_shape,axes", [
    ((1, 3, 4, 5), None), ((1, 3, 4, 5), [2, 3]), ((1, 3, 4, 5), [1]), ((1, 3, 4, 5), [0, 1, 2, 3]),
    ((1, 6, 7), [2]), ((1, 6, 7), [1, 2]), ((2, 3, 4, 5), [0, 3]), ((1, 2, 3, 4, 5), [0, 2, 3, 4]),
], ids=str)
def test_mean_variance_normalization(x_shape, axes, tmp_path):
    model = one_node("MeanVarianceNormalization", x_shape, **({} if axes is None else {"axes": axes}))
    check_both(model, tmp_path, random_inputs(model, low=-3, high=5))
