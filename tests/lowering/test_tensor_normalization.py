"""Softmax / LayerNormalization / Reduce* / Erf / Gelu in the REAL ncnn runtime vs onnxruntime."""
import numpy as np
import pytest
from onnx import helper

from converter import ConversionError
from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model


def model_of(op, x_shape, attrs=None, inits=(), opset=13, out_shape=None):
    names = ["x", *[n for n, _ in inits]]
    node = helper.make_node(op, names, ["y"], **(attrs or {}))
    return make_model([node], [("x", x_shape)], [("y", out_shape)], list(inits), opset)


def layer_types(converted):
    return sorted(n.op for n in converted.graph.nodes.values() if n.op not in ("Input", "MemoryData"))


# ---- Softmax ---------------------------------------------------------------
@pytest.mark.parametrize("x_shape,axis", [
    ([1, 3, 4, 5], -1), ([1, 3, 4, 5], 1), ([1, 3, 4, 5], 2), ([1, 3, 4, 5], -3), ([1, 8], 1), ([3, 4], 0),
    ([1, 2, 3, 4, 5], 1), ([1, 2, 3, 4, 5], 3), ([6], 0), ([1, 3, 4], None),
])
def test_softmax(x_shape, axis, tmp_path):
    converted = check_in_ncnn(model_of("Softmax", x_shape, {} if axis is None else {"axis": axis}), tmp_path)
    assert [n.params for n in converted.graph.nodes.values() if n.op == "Softmax"][0][1] == 1   # fixbug0


def test_softmax_dynamic(tmp_path):
    check_in_ncnn(model_of("Softmax", [1, "T", 8], {"axis": -1}), tmp_path, dims={"T": 5})
    check_in_ncnn(model_of("Softmax", [1, "T", 8], {"axis": 1}), tmp_path, dims={"T": 5})


def test_softmax_along_batch_axis_is_refused(tmp_path):
    with pytest.raises(ConversionError, match=r"Softmax node .*\[1, 3, 4\].*batch axis \(0\)"):
        check_in_ncnn(model_of("Softmax", [1, 3, 4], {"axis": 0}), tmp_path)


def test_softmax_opset11_last_axis(tmp_path):
    check_in_ncnn(model_of("Softmax", [1, 3, 4], {"axis": 2}, opset=11), tmp_path)


# ---- LayerNormalization ----------------------------------------------------
@pytest.mark.parametrize("x_shape,axis", [
    ([1, 5, 8], -1), ([1, 4, 5, 6], -1), ([1, 4, 5, 6], -2), ([1, 4, 5, 6], 1), ([1, 4, 5, 6], 0),
    ([2, 3, 4], 0), ([2, 3, 4], 1), ([1, 2, 3, 4, 5], 2), ([1, 2, 3, 4, 5], 1), ([1, 2, 3, 4, 5], -1),
    ([3, 4], 0), ([3, 4], 1), ([1, 8], 1), ([8], 0),
])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
def test_layer_norm(x_shape, axis, bias, tmp_path):
    rng = np.random.default_rng(len(x_shape) + axis)
    normalized = x_shape[axis:]
    inits = [("scale", rng.uniform(0.5, 1.5, normalized).astype(np.float32))]
    if bias:
        inits.append(("bias", rng.uniform(-1, 1, normalized).astype(np.float32)))
    model = model_of("LayerNormalization", x_shape, {"axis": axis, "epsilon": 1e-3}, inits, opset=17)
    check_in_ncnn(model, tmp_path)


def test_layer_norm_broadcast_scale_and_dynamic_rows(tmp_path):
    inits = [("scale", np.full([8], 1.5, np.float32)), ("bias", np.full([1, 8], 0.25, np.float32))]
    model = model_of("LayerNormalization", [1, "T", 8], {"axis": -1}, inits, opset=17)
    converted = check_in_ncnn(model, tmp_path, dims={"T": 3})
    assert layer_types(converted) == ["LayerNorm"]


def test_layer_norm_unknown_normalized_extent_is_refused(tmp_path):
    inits = [("scale", np.ones([1, 1], np.float32))]
    model = model_of("LayerNormalization", [1, "T", 8], {"axis": 1}, inits, opset=17)
    with pytest.raises(ConversionError, match=r"LayerNormalization node .*unknown extents"):
        check_in_ncnn(model, tmp_path)


# ---- Reductions ------------------------------------------------------------
AXES = [[1], [2], [3], [1, 2], [2, 3], [1, 2, 3], [-1], [0, 1], [0], None]


@pytest.mark.parametrize("axes", AXES, ids=str)
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("op", ["ReduceMean", "ReduceSum"])
def test_reduce_mean_sum(op, keepdims, axes, tmp_path):
    inits = [] if axes is None else [("axes", np.array(axes, np.int64))]
    check_in_ncnn(model_of(op, [1, 3, 4, 5], {"keepdims": keepdims}, inits, opset=18), tmp_path)


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                                "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"])
@pytest.mark.parametrize("axes", [[2], [0, 1]], ids=str)
def test_reduce_other_ops(op, axes, tmp_path):
    inits = [("axes", np.array(axes, np.int64))]
    check_in_ncnn(model_of(op, [1, 3, 4, 5], {"keepdims": 1}, inits, opset=18), tmp_path, low=0.5, high=1.5)


@pytest.mark.parametrize("x_shape,attrs,axes,opset", [
    ([1, 3, 4], {"axes": [2], "keepdims": 0}, None, 13),        # ReduceMean opset 13: axes attribute
    ([6], {"keepdims": 0}, [0], 13), ([6], {"keepdims": 1}, None, 13), ([2, 3, 4], {"keepdims": 0}, [0, 2], 13),
    ([1, 2, 3, 4, 5], {"keepdims": 0}, [2, 4], 13), ([1, 2, 3, 4, 5], {"keepdims": 0}, [0, 3], 13),
    ([1, 3, 4], {"keepdims": 1}, [0, 2], 13),                   # keeps the batch axis as an ncnn axis
])
def test_reduce_shapes(x_shape, attrs, axes, opset, tmp_path):
    op = "ReduceMean" if "axes" in attrs else "ReduceSum"
    inits = [] if axes is None else [("axes", np.array(axes, np.int64))]
    check_in_ncnn(model_of(op, x_shape, attrs, inits, opset=opset), tmp_path)


def test_reduce_noop_with_empty_axes(tmp_path):
    converted = check_in_ncnn(model_of("ReduceSum", [1, 3, 4], {"noop_with_empty_axes": 1}), tmp_path)
    assert layer_types(converted) == ["Noop"]


def test_reduce_dynamic(tmp_path):
    model = model_of("ReduceMean", [1, "T", 8], {"keepdims": 1}, [("axes", np.array([-1], np.int64))], 18)
    check_in_ncnn(model, tmp_path, dims={"T": 5})
    model = model_of("ReduceSum", [1, "T", 8], {"keepdims": 0}, [("axes", np.array([1], np.int64))], 18)
    check_in_ncnn(model, tmp_path, dims={"T": 5})


def test_reduce_keeping_batch_axis_beyond_four_ncnn_axes_merges_the_kept_axes(tmp_path):
    """The kept (extent-1) batch axis leaves 5 ncnn axes; the unreduced neighbours 2 and 3 merge into one."""
    model = model_of("ReduceSum", [1, 2, 3, 4, 5], {"keepdims": 1}, [("axes", np.array([0, 3], np.int64))])
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["merged_wide_tensors"] == 1
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_reduce_only_batch_axis_with_value_transform_is_refused(tmp_path):
    model = model_of("ReduceL2", [1, 3, 4], {"keepdims": 1}, [("axes", np.array([0], np.int64))], 18)
    with pytest.raises(ConversionError, match="ReduceL2 node .*only the batch axis"):
        check_in_ncnn(model, tmp_path)


# ---- Erf / Gelu ------------------------------------------------------------
@pytest.mark.parametrize("x_shape", [[1, 3, 4], [5], [1, 2, 3, 4]])
def test_erf(x_shape, tmp_path):
    assert layer_types(check_in_ncnn(model_of("Erf", x_shape), tmp_path)) == ["Erf"]


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_opset20(approximate, tmp_path):
    model = model_of("Gelu", [1, 4, 16], {"approximate": approximate}, opset=20)
    converted = check_in_ncnn(model, tmp_path, low=-4, high=4)
    assert [n.params for n in converted.graph.nodes.values() if n.op == "GELU"] == [
        {0: int(approximate == "tanh")}]
