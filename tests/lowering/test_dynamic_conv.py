"""Conv / ConvTranspose with the weight (and bias) fed at run time -> ncnn's dynamic-weight
Convolution / ConvolutionDepthWise / Deconvolution, real ncnn and the interpreter against
onnxruntime."""
import numpy as np
import pytest
from onnx import helper

from converter import convert
from converter.ir import ConversionError
from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model


def model_for(op, x_shape, w_shape, bias, const_bias=False, **attrs):
    inputs, inits = [("x", x_shape), ("w", w_shape)], []
    out_c = w_shape[1] * attrs.get("group", 1) if op == "ConvTranspose" else w_shape[0]
    if bias and const_bias:
        inits.append(("b", np.linspace(-1, 1, out_c).astype(np.float32)))
    elif bias:
        inputs.append(("b", (out_c,)))
    node = helper.make_node(op, ["x", "w"] + (["b"] if bias else []), ["y"], **attrs)
    return make_model([node], inputs, [("y", None)], inits)


CASES = {
    "conv": ("Conv", (1, 3, 6, 7), (4, 3, 3, 3), True, False, dict(pads=[1, 0, 1, 2], strides=[2, 1])),
    "conv_no_bias_dilated": ("Conv", (1, 2, 7, 6), (3, 2, 2, 3), False, False, dict(dilations=[2, 1])),
    "conv_const_bias": ("Conv", (1, 3, 5, 5), (2, 3, 3, 3), True, True, {}),
    "conv_one_output": ("Conv", (1, 3, 5, 6), (1, 3, 3, 3), True, False, dict(auto_pad="SAME_UPPER")),
    "conv_grouped": ("Conv", (1, 4, 5, 6), (6, 2, 3, 3), True, False, dict(group=2)),
    "conv_depthwise": ("Conv", (1, 3, 5, 6), (3, 1, 3, 3), False, False, dict(group=3, pads=[1, 1, 1, 1])),
    "deconv": ("ConvTranspose", (1, 3, 4, 5), (3, 2, 3, 3), True, False, dict(strides=[2, 2], pads=[1, 0, 0, 1])),
    "deconv_output_padding": ("ConvTranspose", (1, 2, 3, 4), (2, 3, 2, 3), False, False,
                              dict(strides=[2, 3], output_padding=[1, 1])),
    "deconv_grouped": ("ConvTranspose", (1, 4, 4, 5), (4, 3, 3, 3), True, False,
                       dict(group=2, strides=[2, 2], pads=[1, 1, 0, 1])),
    "deconv_depthwise": ("ConvTranspose", (1, 3, 4, 5), (3, 1, 2, 2), False, False, dict(group=3, strides=[2, 2])),
    "conv1d": ("Conv", (1, 3, 9), (4, 3, 3), True, False, dict(strides=[2], pads=[1, 0])),
    "conv1d_one_output_grouped": ("Conv", (1, 4, 8), (2, 2, 2), False, False, dict(group=2, dilations=[2])),
    "deconv1d": ("ConvTranspose", (1, 3, 6), (3, 2, 3), True, False, dict(strides=[2], output_padding=[1])),
}
LAYERS = {"conv_grouped": "ConvolutionDepthWise", "conv_depthwise": "ConvolutionDepthWise",
          "deconv": "Deconvolution", "deconv_output_padding": "Deconvolution",
          "deconv_grouped": "DeconvolutionDepthWise", "deconv_depthwise": "DeconvolutionDepthWise",
          "conv1d_one_output_grouped": "ConvolutionDepthWise", "deconv1d": "Deconvolution"}


@pytest.mark.parametrize("name", CASES)
def test_dynamic_weight_in_real_ncnn(name, tmp_path):
    op, x_shape, w_shape, bias, const_bias, attrs = CASES[name]
    model = model_for(op, x_shape, w_shape, bias, const_bias, **attrs)
    converted = check_in_ncnn(model, tmp_path)
    main = [n for n in converted.graph.topological() if n.op == LAYERS.get(name, "Convolution")]
    assert len(main) == 1 and len(main[0].inputs) == 2 + bias and not main[0].weights
    check_interpreter_matches_ncnn(converted, model, tmp_path)


@pytest.mark.parametrize("model, why", [
    (lambda: model_for("Conv", (1, 3, 4, 5, 6), (1, 3, 1, 1, 1), True), "must be a constant"),
], ids=["conv3d"])
def test_refused_in_one_line(model, why):
    with pytest.raises(ConversionError, match=why) as info:
        convert(model())
    assert "\n" not in str(info.value)
