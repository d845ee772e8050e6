"""LRN, InstanceNormalization, GroupNormalization: real ncnn against onnxruntime."""
import numpy as np
import onnx
import pytest
from onnx import helper

from converter import convert
from converter.ir import ConversionError
from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model, ncnn_layer_types


def one_node(op, x_shape, inits=(), opset=13, y_shape=None, **attrs):
    node = helper.make_node(op, ["x", *(n for n, _ in inits)], ["y"], **attrs)
    return make_model([node], [("x", x_shape)], [("y", y_shape)], inits, opset=opset)


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


@pytest.mark.parametrize("x_shape", [(1, 4, 5, 6), (1, 3, 7), (1, 2, 3, 4, 5), (1, 16, 3, 3)], ids=str)
def test_instance_normalization_in_real_ncnn(tmp_path, x_shape):
    rng = np.random.default_rng(1)
    c = x_shape[1]
    inits = [("scale", rng.uniform(0.5, 2, c).astype(np.float32)),
             ("B", rng.uniform(-1, 1, c).astype(np.float32))]
    model = one_node("InstanceNormalization", x_shape, inits, epsilon=1e-3)
    converted = check_in_ncnn(model, tmp_path)
    assert ("GroupNorm" if len(x_shape) == 3 else "InstanceNorm") in ncnn_layer_types(converted)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


@pytest.mark.parametrize("opset", [18, 21])
@pytest.mark.parametrize("x_shape,groups", [((1, 6, 5, 4), 3), ((1, 8, 9), 2), ((1, 4, 2, 3, 4), 4),
                                            ((1, 6, 3, 3), 1)], ids=str)
def test_group_normalization_in_real_ncnn(tmp_path, monkeypatch, x_shape, groups, opset):
    """Opset 18's scale/bias are per group, 21's per channel. onnx.checker refuses opset 18's op
    as deprecated (onnxruntime runs it), so that case skips the checker to reach the lowering."""
    if opset < 21:
        monkeypatch.setattr(onnx.checker, "check_model", lambda model: None)
    rng = np.random.default_rng(2)
    n = groups if opset < 21 else x_shape[1]
    inits = [("scale", rng.uniform(0.5, 2, n).astype(np.float32)),
             ("bias", rng.uniform(-1, 1, n).astype(np.float32))]
    model = one_node("GroupNormalization", x_shape, inits, opset=opset, y_shape=x_shape, num_groups=groups,
                     epsilon=1e-4)
    converted = check_in_ncnn(model, tmp_path)
    assert "GroupNorm" in ncnn_layer_types(converted)
    check_interpreter_matches_ncnn(converted, model, tmp_path)
