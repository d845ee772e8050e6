"""Wide (5-D/6-D) tensors read by a Linear right after a window Transpose (Twins), reduced along one axis
(Hiera's query pooling), broadcast by Expand and moved by two Transposes that group them differently
(BoTNet's relative logits): merged to fit ncnn's 4 axes, in the real ncnn and the interpreter against
onnxruntime."""
import numpy as np
import pytest
from onnx import helper

from converter import convert
from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model

RNG = np.random.default_rng(0)


def _ints(name, values):
    return name, np.array(values, np.int64)


def twins_windows(h=4, w=8, win=2, c=4, out=6):
    """[B,H,W,C] -> [B,H/w,w,W/w,w,C] -> Transpose(0,1,3,2,4,5) -> Linear (MatMul by [C, out], Add) ->
    [B, windows, w*w, out]."""
    nodes = [helper.make_node("Reshape", ["x", "part6"], ["p6"]),
             helper.make_node("Transpose", ["p6"], ["p6t"], perm=[0, 1, 3, 2, 4, 5]),
             helper.make_node("MatMul", ["p6t", "w"], ["mm"]),
             helper.make_node("Add", ["mm", "b"], ["lin"]),
             helper.make_node("Reshape", ["lin", "back"], ["y"])]
    inits = [_ints("part6", [1, h // win, win, w // win, win, c]),
             ("w", RNG.uniform(-1, 1, (c, out)).astype(np.float32)), ("b", RNG.uniform(-1, 1, out).astype(np.float32)),
             _ints("back", [1, (h // win) * (w // win), win * win, out])]
    return make_model(nodes, [("x", [1, h, w, c])], [("y", None)], inits)


def test_linear_after_a_window_transpose(tmp_path):
    model = twins_windows()
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["wide_matmul_reshapes"] == 1
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def hiera_pool(op, keepdims, opset, axis=1):
    """[B, N, C] -> [B, 2, 2, N/4, heads, C/heads] -> Reduce over one of the 6 axes -> back to 3-D."""
    axes = {"axes": [axis]} if opset < 18 else {}
    inputs = ["r6"] + (["axes"] if opset >= 18 else [])
    nodes = [helper.make_node("Reshape", ["x", "part6"], ["r6"]),
             helper.make_node(op, inputs, ["red"], keepdims=keepdims, **axes),
             helper.make_node("Reshape", ["red", "back"], ["y"])]
    inits = [_ints("part6", [1, 2, 2, 4, 2, 3]), _ints("back", [1, -1, 6])]
    if opset >= 18:
        inits.append(_ints("axes", [axis]))
    return make_model(nodes, [("x", [1, 16, 6])], [("y", None)], inits, opset=opset)


@pytest.mark.parametrize("op, keepdims, opset, axis", [
    ("ReduceMax", 0, 17, 1), ("ReduceMax", 1, 18, 1), ("ReduceMean", 0, 18, 3), ("ReduceSum", 1, 13, 2)])
def test_reduce_of_a_wide_tensor(tmp_path, op, keepdims, opset, axis):
    model = hiera_pool(op, keepdims, opset, axis) if op != "ReduceSum" else _reduce_sum_13(keepdims, axis)
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["merged_wide_tensors"] >= 1
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def _reduce_sum_13(keepdims, axis):
    """ReduceSum takes its axes as an input from opset 13 (the others from 18)."""
    nodes = [helper.make_node("Reshape", ["x", "part6"], ["r6"]),
             helper.make_node("ReduceSum", ["r6", "axes"], ["red"], keepdims=keepdims),
             helper.make_node("Reshape", ["red", "back"], ["y"])]
    inits = [_ints("part6", [1, 2, 2, 4, 2, 3]), _ints("axes", [axis]), _ints("back", [1, -1, 6])]
    return make_model(nodes, [("x", [1, 16, 6])], [("y", None)], inits, opset=13)


def relative_logits(heads=4, h=4, w=4):
    """BoTNet's relative position logits: per-axis logits broadcast to [B*heads, H, H, W, W] (Expand), one
    moved by (0, 1, 3, 2, 4), the other by (0, 3, 1, 4, 2), added, read as [B*heads, HW, HW]."""
    ints = lambda v: np.array(v, np.int64)     # noqa: E731
    nodes = [helper.make_node("Reshape", ["a", "five"], ["a5"]),
             helper.make_node("Expand", ["a5", "full"], ["ae"]),
             helper.make_node("Transpose", ["ae"], ["at"], perm=[0, 1, 3, 2, 4]),
             helper.make_node("Reshape", ["b", "five"], ["b5"]),
             helper.make_node("Expand", ["b5", "full"], ["be"]),
             helper.make_node("Transpose", ["be"], ["bt"], perm=[0, 3, 1, 4, 2]),
             helper.make_node("Add", ["at", "bt"], ["s"]),
             helper.make_node("Reshape", ["s", "square"], ["y"])]
    inits = [("five", ints([heads, h, 1, w, w])), ("full", ints([heads, h, h, w, w])),
             ("square", ints([1, heads, h * w, h * w]))]
    return make_model(nodes, [("a", [1, heads, h, w * w]), ("b", [1, heads, h, w * w])], [("y", None)], inits)


def test_relative_logits_through_two_transposes(tmp_path):
    """The Transposes' readers need other groupings than the Expands give: Reshapes between untie them."""
    model = relative_logits()
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["wide_transpose_reshapes"] == 2
    check_interpreter_matches_ncnn(converted, model, tmp_path)
