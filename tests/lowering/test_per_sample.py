"""Dynamic-weight Conv / ConvTranspose and GridSample over a batch N > 1 (lowering/per_sample.py):
each sample cut out, run as at batch 1 and concatenated; real ncnn and the interpreter against
onnxruntime."""
import numpy as np
import pytest
from onnx import helper

from converter import convert
from converter.ir import ConversionError
from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model, ncnn_layer_types
from test_stft import hann, stft_model

CASES = {
    "conv2d": ("Conv", [("x", [2, 4, 9, 8]), ("w", [6, 4, 3, 3])], {"strides": [2, 1], "pads": [1, 0, 1, 1]}),
    "conv1d_grouped": ("Conv", [("x", [3, 4, 11]), ("w", [4, 2, 3]), ("b", [4])], {"group": 2}),
    "deconv2d": ("ConvTranspose", [("x", [2, 3, 5, 6]), ("w", [3, 4, 3, 3])], {"strides": [2, 2]}),
    "deconv1d": ("ConvTranspose", [("x", [2, 3, 7]), ("w", [3, 2, 3])], {}),
    "grid_sample": ("GridSample", [("x", [2, 3, 6, 7]), ("grid", [2, 5, 4, 2])], {"align_corners": 1}),
}


def model_of(case, batch=None):
    op, inputs, attrs = CASES[case]
    if batch is not None:
        inputs = [(name, [batch, *shape[1:]]) if name in ("x", "grid") else (name, shape) for name, shape in inputs]
    node = helper.make_node(op, [name for name, _ in inputs], ["y"], **attrs)
    return make_model([node], inputs, [("y", None)], opset=17)


@pytest.mark.parametrize("case", CASES)
def test_per_sample_in_real_ncnn(case, tmp_path):
    model = model_of(case)
    converted = check_in_ncnn(model, tmp_path)
    types = ncnn_layer_types(converted)
    batch = CASES[case][1][0][1][0]
    assert types.count("Concat") == 1 and types.count("Crop") == batch * (1 + (case == "grid_sample"))
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_a_batch_beyond_the_limit_is_refused_in_one_line():
    with pytest.raises(ConversionError, match="has no batch axis of extent 1") as info:
        convert(model_of("conv2d", batch=17))
    assert "\n" not in str(info.value)


def test_stft_over_a_batch_and_over_an_unbatched_signal(tmp_path):
    """(2, L) signals: one Spectrogram each; (L,) unsqueezed to (1, L, 1): a leading 1 that is no
    batch axis, the Reshapes alone."""
    batched = stft_model([2, 200], 16, hann(64))
    converted = check_in_ncnn(batched, tmp_path, low=-1, high=1, rtol=1e-4, atol=1e-4)
    assert ncnn_layer_types(converted).count("Spectrogram") == 2
    check_interpreter_matches_ncnn(converted, batched, tmp_path)
    window = ("window", hann(64))
    nodes = [helper.make_node("Unsqueeze", ["x", "axes"], ["s"]),
             helper.make_node("STFT", ["s", "step", "window"], ["y"])]
    unbatched = make_model(nodes, [("x", [200])], [("y", None)],
                           [("axes", np.array([0, 2], np.int64)), ("step", np.array(16, np.int64)), window], opset=17)
    converted = check_in_ncnn(unbatched, tmp_path, low=-1, high=1, rtol=1e-4, atol=1e-4)
    assert ncnn_layer_types(converted).count("Spectrogram") == 1
