"""ONNX DeformConv as ncnn DeformableConv2D, in real ncnn and the interpreter against onnxruntime:
offsets reaching outside the image, with and without mask and bias, strides, pads, dilations."""
import numpy as np
import pytest
from onnx import helper

from converter import convert
from converter.ir import ConversionError
from onnx_cases import assert_matches_reference, check_in_ncnn, make_model, random_inputs

GEOMETRY = [dict(), dict(strides=[2, 1], pads=[1, 0, 1, 2]), dict(dilations=[2, 1], pads=[1, 1, 1, 1])]


def deform_model(kernel=(3, 3), mask=True, bias=True, group=1, **attrs):
    rng = np.random.default_rng(0)
    h, w = 9, 8
    strides, dilations = attrs.get("strides", [1, 1]), attrs.get("dilations", [1, 1])
    top, left, bottom, right = attrs.get("pads", [0, 0, 0, 0])
    out_h = (h + top + bottom - dilations[0] * (kernel[0] - 1) - 1) // strides[0] + 1
    out_w = (w + left + right - dilations[1] * (kernel[1] - 1) - 1) // strides[1] + 1
    taps = kernel[0] * kernel[1]
    names = ["x", "w", "offset", "b" if bias else "", "mask" if mask else ""]
    node = helper.make_node("DeformConv", names[:5 if mask else 4 if bias else 3], ["y"], group=group, **attrs)
    inputs = [("x", [1, 4, h, w]), ("offset", [1, 2 * taps, out_h, out_w])] + ([("mask", [1, taps, out_h, out_w])]
                                                                           if mask else [])
    consts = [("w", rng.uniform(-1, 1, (5, 4 // group, *kernel)).astype(np.float32))]
    consts += [("b", rng.uniform(-1, 1, 5).astype(np.float32))] if bias else []
    return make_model([node], inputs, [("y", None)], consts, opset=19)


@pytest.mark.parametrize("mask,bias", [(True, True), (False, False)], ids=["mask_bias", "plain"])
@pytest.mark.parametrize("attrs", GEOMETRY, ids=["default", "stride_pads", "dilation"])
def test_deform_conv(tmp_path, attrs, mask, bias):
    model = deform_model(mask=mask, bias=bias, **attrs)
    feeds = random_inputs(model, low=-3, high=3)        # offsets of up to 3 pixels leave the image
    converted = check_in_ncnn(model, tmp_path, feeds=feeds)
    assert [n.op for n in converted.graph.topological() if n.op != "Input"] == ["DeformableConv2D"]
    assert_matches_reference(model, feeds, converted.run(feeds))


def test_groups_are_refused_by_name():
    with pytest.raises(ConversionError, match="DeformConv node .*group=2"):
        convert(deform_model(group=2))
