"""Anchor grids over run-time sizes (Range, ConstantOfShape, Expand): one file, many sizes.

Each model is converted once with its spatial size left dynamic, then run in the
real ncnn and in the interpreter at several sizes and compared with onnxruntime.
"""
import numpy as np
import onnx
import pytest
from onnx import helper

from converter import convert
from converter.ir import ConversionError
from onnx_cases import (assert_matches_reference, assert_one_file_many_sizes, make_model, ncnn_layer_types,
                        run_converted_in_ncnn, to_ncnn)

I64 = lambda v: np.array(v, np.int64)  # noqa: E731
F32 = lambda v: np.array(v, np.float32)  # noqa: E731
FLOAT = onnx.TensorProto.FLOAT


def _extent(axis: int, name: str) -> list:
    """Nodes making float tensor `name` = x.shape[axis]."""
    return [helper.make_node("Gather", ["s", f"i{axis}"], [f"{name}_i"], axis=0),
            helper.make_node("Cast", [f"{name}_i"], [name], to=FLOAT)]


def yolo_grid_model():
    """YOLOv8's head: centres (x+0.5, y+0.5) of an H x W feature map as an (H*W, 2) grid, its stride
    column from ConstantOfShape([H*W, 1]), and the feature map flattened beside them."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]), *_extent(2, "h"), *_extent(3, "w"),
             helper.make_node("Range", ["zero", "w", "one"], ["rw"]),
             helper.make_node("Range", ["zero", "h", "one"], ["rh"]),
             helper.make_node("Add", ["rw", "half"], ["sx"]),
             helper.make_node("Add", ["rh", "half"], ["sy"]),
             helper.make_node("Unsqueeze", ["sy", "ax1"], ["sy_col"]),
             helper.make_node("Shape", ["sy"], ["nh"]),
             helper.make_node("Shape", ["sx"], ["nw"]),
             helper.make_node("Concat", ["nh", "nw"], ["hw"], axis=0),
             helper.make_node("Expand", ["sx", "hw"], ["gx"]),
             helper.make_node("Expand", ["sy_col", "hw"], ["gy"]),
             helper.make_node("Unsqueeze", ["gx", "axm1"], ["gx1"]),
             helper.make_node("Unsqueeze", ["gy", "axm1"], ["gy1"]),
             helper.make_node("Concat", ["gx1", "gy1"], ["g"], axis=-1),
             helper.make_node("Reshape", ["g", "pairs"], ["grid"]),
             helper.make_node("ReduceProd", ["hw"], ["n"], keepdims=1),
             helper.make_node("Concat", ["n", "one_i"], ["n1"], axis=0),
             helper.make_node("ConstantOfShape", ["n1"], ["stride"],
                              value=helper.make_tensor("v", FLOAT, [1], [8.0])),
             helper.make_node("Mul", ["grid", "stride"], ["scaled"]),
             helper.make_node("Relu", ["x"], ["feat"])]
    inits = [("zero", F32(0)), ("one", F32(1)), ("half", F32(0.5)), ("i2", I64(2)), ("i3", I64(3)),
             ("ax1", I64([1])), ("axm1", I64([-1])), ("pairs", I64([-1, 2])), ("one_i", I64([1]))]
    return make_model(nodes, [("x", [1, 4, "H", "W"])], [("scaled", None), ("feat", None)], inits)


def strided_range_model(start: float, delta: float):
    """Range(start, W, delta) times the columns of x: a run-time count with a constant start and step."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]), *_extent(3, "w"),
             helper.make_node("Range", ["start", "w", "delta"], ["r"]),
             helper.make_node("Mul", ["r", "two"], ["y"])]
    inits = [("start", F32(start)), ("delta", F32(delta)), ("i3", I64(3)), ("two", F32(2))]
    return make_model(nodes, [("x", [1, 2, 3, "W"])], [("y", None)], inits)


def filled_volume_model():
    """ConstantOfShape([2, H, W]) + x[0]: a 3-D fill whose channel count is known."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Slice", ["s", "two", "four"], ["hw"]),
             helper.make_node("Concat", ["c", "hw"], ["shape"], axis=0),
             helper.make_node("ConstantOfShape", ["shape"], ["fill"],
                              value=helper.make_tensor("v", FLOAT, [1], [-1.5])),
             helper.make_node("Add", ["x", "fill"], ["y"])]
    inits = [("two", I64([2])), ("four", I64([4])), ("c", I64([2]))]
    return make_model(nodes, [("x", [1, 2, "H", "W"])], [("y", None)], inits)


def test_yolo_anchor_grid_at_many_sizes(tmp_path):
    converted = assert_one_file_many_sizes(yolo_grid_model(), tmp_path, [(4, 5), (7, 3), (20, 32)], rtol=0, atol=0)
    types = ncnn_layer_types(converted)
    assert "CumulativeSum" in types and "Interp" in types
    assert not {"Range", "Expand", "ConstantOfShape", "Shape"} & set(types)


@pytest.mark.parametrize("start,delta", [(0, 1), (1, 2), (3, 1), (20, -2), (-4, 3)])
def test_range_with_run_time_limit(tmp_path, start, delta):
    assert_one_file_many_sizes(strided_range_model(start, delta), tmp_path, [(7,), (12,)], dims=("W",), rtol=0, atol=0)


def test_three_dimensional_fill(tmp_path):
    assert_one_file_many_sizes(filled_volume_model(), tmp_path, [(3, 4), (6, 2)], rtol=0, atol=0)


def test_fractional_range_start_still_asks_for_a_fixed_shape():
    """A count of steps from a non-integral start is not a run-time term: the old refusal stands."""
    with pytest.raises(ConversionError, match="--input-shape x="):
        convert(strided_range_model(0.5, 1))


def masked_halving_model():
    """onnx-asr's resampler shape: keep the first (N + 1) // 2 samples of a stride-2 Conv's output
    (Slice to a run-time end) and zero those past the halved length input (Range < lens, Where); the
    halved lengths are an integer output (Div truncates)."""
    nodes = [helper.make_node("Unsqueeze", ["x", "ax1"], ["x3"]),
             helper.make_node("Conv", ["x3", "w"], ["c"], strides=[2], pads=[1, 1]),
             helper.make_node("Squeeze", ["c", "ax1"], ["c2"]),
             helper.make_node("Shape", ["x"], ["s"], start=1, end=2),
             helper.make_node("Squeeze", ["s"], ["n"]),
             helper.make_node("Add", ["n", "one"], ["n1"]),
             helper.make_node("Div", ["n1", "two"], ["half"]),
             helper.make_node("Unsqueeze", ["half", "ax0"], ["half1"]),
             helper.make_node("Slice", ["c2", "zero1", "half1", "ax1"], ["kept"]),
             helper.make_node("Add", ["lens", "one"], ["lens1"]),
             helper.make_node("Div", ["lens1", "two"], ["out_lens"]),
             helper.make_node("Range", ["zero", "half", "one"], ["t"]),
             helper.make_node("Unsqueeze", ["t", "ax0"], ["t2"]),
             helper.make_node("Unsqueeze", ["out_lens", "ax1"], ["l2"]),
             helper.make_node("Less", ["t2", "l2"], ["mask"]),
             helper.make_node("Where", ["mask", "kept", "zerof"], ["y"])]
    inits = [("ax0", I64([0])), ("ax1", I64([1])), ("one", I64(1)), ("two", I64(2)), ("zero", I64(0)),
             ("zero1", I64([0])), ("zerof", F32(0)), ("w", np.full((1, 1, 3), 1 / 3, np.float32))]
    model = make_model(nodes, [("x", [1, "N"]), ("lens", [1], onnx.TensorProto.INT64)], [("y", None)], inits,
                       opset=15)
    model.graph.output.append(helper.make_tensor_value_info("out_lens", onnx.TensorProto.INT64, [1]))
    return model


@pytest.mark.parametrize("n,lens", [(9, 9), (16, 16), (16, 7), (31, 20)])
def test_slice_to_a_run_time_end_and_integer_lengths(tmp_path, n, lens):
    model = masked_halving_model()
    feeds = {"x": np.random.default_rng(n).standard_normal((1, n)).astype(np.float32),
             "lens": np.array([lens], np.int64)}
    converted, outputs = run_converted_in_ncnn(model, feeds, tmp_path)
    assert_matches_reference(model, feeds, outputs, rtol=1e-6, atol=1e-6)
    ours = converted.run({e["ncnn"]: to_ncnn(feeds[e["onnx"]], e) for e in converted.io()["inputs"]}, layout="ncnn")
    assert_matches_reference(model, feeds, {e["onnx"]: ours[e["ncnn"]] for e in converted.io()["outputs"]},
                             rtol=1e-6, atol=1e-6)
    assert "Crop" in ncnn_layer_types(converted) and "Shape" not in ncnn_layer_types(converted)


@pytest.mark.parametrize("start", [-3e9, 2**33])
def test_range_start_beyond_int32_is_refused(start):
    """ncnn's expressions read literals with %d and compute in C ints: a wider start is refused by name."""
    with pytest.raises(ConversionError, match="ConstantOfShape node .*does not fit the 32-bit ints"):
        convert(strided_range_model(start, 1))
