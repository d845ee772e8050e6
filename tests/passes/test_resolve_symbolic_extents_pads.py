"""Pads computed from run-time sizes (the classic U-Net's `F.pad(up, [dx // 2, dx - dx // 2, ...])` with
dx = skip.size(3) - up.size(3)): express_shapes keeps them as terms; where each is a formula of one
extent bounded over the probed sizes, resolve_symbolic_extents (converter/shapes/runtime_pad.py) pads by the
bounds (a constant Padding, none when no pad is ever positive) and crops the window with 19/20
expressions; the Pad lowering refuses the rest naming the node."""
import numpy as np
import pytest
from onnx import helper

from converter import convert
from converter.ir import ConversionError
from converter.shapes.symbolic import Ref, op
from converter.shapes.term_arithmetic import broadcast, evaluate
from onnx_cases import assert_one_file_many_sizes, make_model

I64 = lambda v: np.array(v, np.int64)  # noqa: E731
H, W = Ref("y", 2), Ref("y", 3)


def pad_to_skip_model(up_by: str | None, mode="constant"):
    """up = ConvTranspose(Conv_s2(y)) (never smaller than y: its pads only crop), Resize x2 of a floor-mode
    MaxPool of y (0 or 1 smaller: its pads are 0 or 1), or Conv_s2(y) alone (about half of y: pads that
    grow with it); then up padded by y's size minus its own, split in halves."""
    rng = np.random.default_rng(0)
    nodes = [helper.make_node("Conv", ["y", "k"], ["down"], strides=[2, 2], pads=[1, 1, 1, 1])]
    inits = [("k", rng.normal(size=(2, 2, 3, 3)).astype(np.float32)), ("two", I64(2)), ("zeros", I64([0, 0])),
             ("i2", I64(2)), ("i3", I64(3)), ("x2", np.array([1, 1, 2, 2], np.float32)),
             ("roi", np.zeros(0, np.float32))]
    up = "down"
    if up_by == "transposed":
        nodes.append(helper.make_node("ConvTranspose", ["down", "kt"], ["up"], strides=[2, 2]))
        inits.append(("kt", rng.normal(size=(2, 2, 2, 2)).astype(np.float32)))
        up = "up"
    elif up_by == "pool":
        nodes = [helper.make_node("MaxPool", ["y"], ["pooled"], kernel_shape=[2, 2], strides=[2, 2]),
                 helper.make_node("Resize", ["pooled", "roi", "x2"], ["up"], mode="nearest")]
        up = "up"
    for axis, name in ((2, "dy"), (3, "dx")):
        idx = "i2" if axis == 2 else "i3"
        nodes += [helper.make_node("Shape", ["y"], [f"sy{axis}"]), helper.make_node("Shape", [up], [f"su{axis}"]),
                  helper.make_node("Gather", [f"sy{axis}", idx], [f"a{axis}"], axis=0),
                  helper.make_node("Gather", [f"su{axis}", idx], [f"b{axis}"], axis=0),
                  helper.make_node("Sub", [f"a{axis}", f"b{axis}"], [name]),
                  helper.make_node("Div", [name, "two"], [f"{name}_lo"]),
                  helper.make_node("Sub", [name, f"{name}_lo"], [f"{name}_hi"]),
                  helper.make_node("Unsqueeze", [f"{name}_lo"], [f"{name}_lo1"], axes=[0]),
                  helper.make_node("Unsqueeze", [f"{name}_hi"], [f"{name}_hi1"], axes=[0])]
    nodes += [helper.make_node("Concat", ["zeros", "dy_lo1", "dx_lo1", "zeros", "dy_hi1", "dx_hi1"], ["pads"], axis=0),
              helper.make_node("Pad", [up, "pads"], ["z"], mode=mode)]
    return make_model(nodes, [("y", [1, 2, "H", "W"])], [("z", None)], inits, opset=11)


def crop_after(converted, padding: dict | None):
    types = [n.op for n in converted.graph.nodes.values()]
    assert types.count("Crop") == 1 and types.count("Padding") == (padding is not None), types
    crop = next(n for n in converted.graph.nodes.values() if n.op == "Crop")
    assert {19, 20, 21} <= set(crop.params) and len(crop.inputs) >= 2, crop      # and the blobs its pads read
    if padding is not None:
        pad = next(n for n in converted.graph.nodes.values() if n.op == "Padding")
        assert {k: pad.params.get(k, 0) for k in (0, 1, 2, 3)} == padding and pad.outputs[0] == crop.inputs[0]


def test_pads_that_only_crop_become_a_crop(tmp_path):
    converted = assert_one_file_many_sizes(pad_to_skip_model("transposed"), tmp_path, [(8, 8), (7, 13), (13, 6)])
    crop_after(converted, None)


@pytest.mark.parametrize("mode", ["constant", "edge"])
def test_pads_of_0_or_1_pad_by_1_then_crop(tmp_path, mode):
    """dx = W - 2 * (W // 2): begin dx // 2 is always 0, end dx - dx // 2 is 0 or 1."""
    converted = assert_one_file_many_sizes(pad_to_skip_model("pool", mode), tmp_path, [(8, 8), (7, 13), (13, 6)])
    crop_after(converted, {0: 0, 1: 1, 2: 0, 3: 1})


def test_pads_that_grow_with_the_size_are_refused_naming_the_pad():
    with pytest.raises(ConversionError, match="Pad node .*pads computed at run time"):
        convert(pad_to_skip_model(None))


def test_terms_behind_the_pads():
    """A stride-2 conv's extent as a term of its input's; two formulas of one extent broadcast to their
    max (one is 1 or they are equal); '//' truncates toward zero like ONNX's Div and ncnn."""
    half = op("+", op("//", op("+", H, -1), 2), 1)
    assert evaluate(half, {H: 7}) == 4 and evaluate(half, {H: 8}) == 4
    _, larger = broadcast([(1, half), (1, op("*", half, 2))])
    assert larger.name == "max" and [evaluate(larger, {H: n}) for n in (1, 2, 7)] == [2, 2, 8]
    assert broadcast([(1, H), (1, W)]) == (1, None)          # different extents: either could be 1
    assert evaluate(op("//", op("+", H, -3), 2), {H: 0}) == -1
