"""LRN, InstanceNormalization, GroupNormalization: real ncnn against onnxruntime."""
import numpy as np
import pytest
from onnx import helper

from converter import convert
from converter.ir import ConversionError
from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model, ncnn_layer_types


def one_node(op, x_shape, inits=(), opset=13, **attrs):
    node = helper.make_node(op, ["x", *(n for n, _ in inits)], ["y"], **attrs)
    return make_model([node], [("x", x_shape)], [("y", None)], inits, opset=opset)


@pytest.mark.parametrize("x_shape,attrs", [
    ((1, 7, 5, 6), dict(size=5)),
    ((1, 7, 5, 6), dict(size=5, alpha=5e-4, beta=0.75, bias=2.0)),
    ((1, 9, 4, 3), dict(size=3, alpha=0.5, beta=0.6, bias=1.5)),
    ((1, 4, 3, 3), dict(size=1, alpha=2.0, beta=1.0, bias=0.5)),
], ids=["alexnet", "zfnet", "size3", "size1"])
def test_lrn_in_real_ncnn(tmp_path, x_shape, attrs):
    model = one_node("LRN", x_shape, **attrs)
    converted = check_in_ncnn(model, tmp_path, low=-3.0, high=3.0)
    assert "LRN" in ncnn_layer_types(converted)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_lrn_even_size_is_refused():
    with pytest.raises(ConversionError, match="LRN node.*size 4.*odd sizes"):
        convert(one_node("LRN", (1, 6, 4, 4), size=4))
