"""A few cells of scripts/quantize_sweep.py, each one that a fix came from: a zoo model quantized on the
fly by onnxruntime.quantization with the cell's options, converted, and judged by verify's per-layer
rule in the real ncnn and the interpreter (every layer, fed onnxruntime's values of its inputs, within
one step of its quantizer: converter/quantization_steps.py). End to end the steps may add up ("drift"),
which the sweep reports but the per-layer rule does not count against the file. quantize_dynamic's models
run in float and are judged end to end: within 1e-5 of the largest output."""
from __future__ import annotations

import pytest

from scripts.quantize_sweep import model_source, options, quantize, judge

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
    source, feeds_of = model_source(model)
    target = tmp_path / "q.onnx"
    quantize(source, target, options(config), [feeds_of(seed) for seed in range(3)])
    status, detail = judge(target, feeds_of(99), target, options(config)["form"])
    assert status in ("pass", "drift"), (status, detail)
