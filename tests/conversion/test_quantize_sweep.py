"""A few cells of scripts/quantize_sweep.py, each one that a fix came from: a zoo model quantized on the
fly by onnxruntime.quantization with the cell's options, converted, and judged in the real ncnn and
the interpreter by the sweep's rules: every layer within one step of its quantizer (verify), and end to
end no further from the spec graph than test_quantized_models' yardsticks allow; quantize_dynamic's
models run in float: within 1e-5 of the largest output."""
from __future__ import annotations

import pytest

from scripts.quantize_sweep import cell

CELLS = [
    # per-tensor weights let a grouped Conv (RegNet's) pass ncnn's one-scale-per-group check: the real
    # ncnn's int8 group convolution then came out several units off
    ("regnety_ts", "qdq_per_tensor"),
    # a QLinearConv whose quantizer's clip folds into the layer: its int8 output keeps its ONNX name, so
    # the per-layer check feeds onnxruntime's value to the QLinearSigmoid after it
    ("efficientnet_b0_ts", "qop_s8"),
    # quantize_dynamic: the run-time scale is (max - min) / 255 as onnxruntime divides it; times 1/255 was an
    # ulp off, a ReLU output near a .5 step quantized one step off and RegNet's logits moved 0.04 (1e-5 allowed)
    ("regnety_ts", "dynamic_rr"),
]


@pytest.mark.parametrize("model, config", CELLS)
def test_sweep_cell(tmp_path, model, config):
    status, detail = cell(model, config, tmp_path)
    # "drift" of the real ncnn alone: its x86 int8 kernels round their dequantizing arithmetic their own
    # way (on AVX-512 the depthwise ones fuse the multiply-add, measured on main), the steps that flips
    # stay within verify's one step per layer but EfficientNet's chain carries them on (0.14 where the
    # yardsticks give 0.026), while the interpreter lands exactly on the spec graph quantizing with the
    # converted file's arithmetic
    assert status == "pass" or (status == "drift" and "interpreter" not in detail), (status, detail)
