"""Issue 24 item 2: onnx's data-propagating shape inference runs in a child process, so a native
abort inside it (madmom's onsets_cnn: a failed C++ assertion, SIGABRT) cannot end the caller:
plain inference runs instead, and when that dies too the model is refused in one line."""
import os

import numpy as np
import onnx
import pytest
from onnx import helper

import converter
from converter.onnx_side import isolated_inference
from converter.batch_convert import worker_death
from onnx_cases import make_model, onnxruntime_outputs


def small_model() -> onnx.ModelProto:
    return make_model([helper.make_node("Relu", ["x"], ["y"])], [("x", [1, 3, 4])], [("y", [1, 3, 4])])


def aborting(when_data_prop: set):
    real = isolated_inference._infer

    def infer(proto, data_prop):
        if data_prop in when_data_prop:
            os.abort()          # what a failed C++ assertion does: no Python exception
        return real(proto, data_prop)
    return infer


@pytest.mark.parametrize("served_bytes", [isolated_inference.SERVED_BYTES, 0])     # the shared child; one per model
def test_an_abort_in_data_propagation_falls_back_to_plain_inference(monkeypatch, served_bytes):
    monkeypatch.setattr(isolated_inference, "SERVED_BYTES", served_bytes)
    monkeypatch.setattr(isolated_inference, "_infer", aborting({True}))
    model = converter.convert(small_model())
    assert any("data propagation crashed (SIGABRT)" in w for w in model.graph.warnings)
    x = np.random.default_rng(0).standard_normal((1, 3, 4)).astype(np.float32)
    np.testing.assert_array_equal(model.run({"x": x})["y"], onnxruntime_outputs(small_model(), {"x": x})["y"])


def test_an_abort_in_both_is_one_refusal_naming_the_shapes(monkeypatch):
    monkeypatch.setattr(isolated_inference, "_infer", aborting({True, False}))
    with pytest.raises(converter.ConversionError, match=r"crashed \(SIGABRT, then SIGABRT.*x=\[1,3,4\].*--input-shape"):
        converter.convert(small_model())


def test_python_errors_in_inference_still_reach_the_caller(monkeypatch):
    def broken(proto, data_prop):
        raise onnx.shape_inference.InferenceError("[ShapeInferenceError] bad")
    monkeypatch.setattr(isolated_inference, "_infer", broken)
    with pytest.raises(converter.ConversionError, match="shape inference failed.*bad"):
        converter.convert(small_model())


def test_a_dead_worker_names_its_signal():
    assert worker_death(-6) == "the worker process died (SIGABRT)"
    assert worker_death(-9) == "the worker process died (SIGKILL; out of memory?)"
