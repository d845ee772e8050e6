"""MaxPool / AveragePool / global pooling -> ncnn Pooling, in the real ncnn runtime against onnxruntime."""
import pytest
from onnx import helper

from onnx_cases import assert_one_file_many_sizes, check_in_ncnn, make_model


def pool_model(op, x_shape, **attrs):
    node = helper.make_node(op, ["x"], ["y"], **attrs)
    return make_model([node], [("x", x_shape)], [("y", None)])


GEOMETRY = {
    "k2s2": dict(kernel_shape=[2, 2], strides=[2, 2]),
    "k3s2p1": dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
    "asym_pads": dict(kernel_shape=[3, 3], pads=[0, 1, 1, 2]),
    "rect_kernel": dict(kernel_shape=[3, 2], strides=[1, 2], pads=[1, 0, 1, 1]),
    "ceil_tail": dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
    "ceil_tail_pads": dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1),
    "ceil_no_tail": dict(kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
    "same_upper": dict(kernel_shape=[2, 3], strides=[2, 2], auto_pad="SAME_UPPER"),
    "same_lower": dict(kernel_shape=[3, 2], strides=[2, 2], auto_pad="SAME_LOWER"),
    "valid_ceil": dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="VALID", ceil_mode=1),
}


@pytest.mark.parametrize("geometry", GEOMETRY)
@pytest.mark.parametrize("op, extra", [("MaxPool", {}), ("AveragePool", {"count_include_pad": 0}),
                                       ("AveragePool", {"count_include_pad": 1})],
                         ids=["max", "avg_exclude_pad", "avg_include_pad"])
def test_pool_in_real_ncnn(op, extra, geometry, tmp_path):
    check_in_ncnn(pool_model(op, (1, 3, 9, 8), **GEOMETRY[geometry], **extra), tmp_path)


def test_avg_include_pad_ceil_tail_pads_become_real_zeros(tmp_path):
    """onnxruntime counts the pads but not the ceil tail: a Padding layer makes that exact."""
    model = pool_model("AveragePool", (1, 2, 6, 6), kernel_shape=[3, 3], strides=[2, 2],
                       pads=[1, 1, 1, 1], ceil_mode=1, count_include_pad=1)
    types = [n.op for n in check_in_ncnn(model, tmp_path).graph.nodes.values()]
    assert types.count("Padding") == 1 and types.count("Pooling") == 1


@pytest.mark.parametrize("op, attrs", [
    ("MaxPool", dict(kernel_shape=[3], strides=[2], pads=[1, 1])),
    ("AveragePool", dict(kernel_shape=[2], strides=[2], ceil_mode=1)),
    ("AveragePool", dict(kernel_shape=[3], pads=[1, 0], count_include_pad=1)),
], ids=["max", "avg_ceil", "avg_include_pad"])
def test_pool_1d(op, attrs, tmp_path):
    check_in_ncnn(pool_model(op, (1, 4, 11), **attrs), tmp_path)


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
@pytest.mark.parametrize("x_shape", [(1, 5, 4, 6), (1, 5, 7)], ids=["2d", "1d"])
def test_global_pool_keeps_unit_spatial_axes(op, x_shape, tmp_path):
    converted = check_in_ncnn(pool_model(op, x_shape), tmp_path)
    assert converted.io()["outputs"][0]["ncnn_shape"] == [5] + [1] * (len(x_shape) - 2)


DYNAMIC = {
    "max_ceil": ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)),
    "avg_ceil_exclude": ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                                             ceil_mode=1)),
    "avg_ceil_include": ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                                             ceil_mode=1, count_include_pad=1)),
    "avg_ceil_include_nopad": ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1,
                                                   count_include_pad=1)),
    "max_same_upper": ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")),
    "avg_same_lower_include": ("AveragePool", dict(kernel_shape=[2, 2], strides=[2, 2],
                                                   auto_pad="SAME_LOWER", count_include_pad=1)),
    "avg_floor_pads": ("AveragePool", dict(kernel_shape=[3, 2], strides=[2, 2], pads=[1, 0, 1, 1])),
    "global_avg": ("GlobalAveragePool", {}),
}


@pytest.mark.parametrize("case", DYNAMIC)
def test_pool_dynamic_size_one_file_many_sizes(case, tmp_path):
    op, attrs = DYNAMIC[case]
    model = pool_model(op, (1, 3, "H", "W"), **attrs)
    assert_one_file_many_sizes(model, tmp_path, [(7, 8), (10, 5), (16, 16)])
