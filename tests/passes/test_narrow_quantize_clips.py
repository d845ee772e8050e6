"""The Clip of a float-emulated QuantizeLinear goes where its producer bounds the value (Sigmoid) or
clips instead (the Conv's fused activation, a Clip layer), and the real ncnn's numbers do not change
by one bit; onnxruntime's spec run of the QDQ graph stays as close as before."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from converter.api import NcnnModel
from converter.ncnn_side.runtime import run_ncnn
from converter.onnx_side.loader import load_onnx
from passes import run_pipeline
from passes.narrow_quantize_clips import _bound, _rounded, narrow_quantize_clips
from quantized_cases import qdq_chain_model

# ordinary values, values far beyond the calibrated range, and whole multiples of the input step
X = np.concatenate([np.random.default_rng(4).normal(0, 2, (1, 2, 6, 7)),
                    np.random.default_rng(5).integers(-160, 160, (1, 2, 6, 7)) * 0.05], axis=1).astype(np.float32)


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """(model with the pass, model without it, their real-ncnn outputs)."""
    tmp = tmp_path_factory.mktemp("narrow")
    models, outputs = [], []
    for skip in (set(), {narrow_quantize_clips}):
        graph = load_onnx(qdq_chain_model())
        model = NcnnModel(graph, run_pipeline(graph, skip=skip))
        stem = tmp / f"m{len(models)}"
        model.save(stem.with_suffix(".param"), stem.with_suffix(".bin"))
        blob = model.io()["outputs"][0]["ncnn"]
        outputs.append(run_ncnn(stem.with_suffix(".param"), stem.with_suffix(".bin"), {"x": X[0]}, [blob])[blob])
        models.append(model)
    return models, outputs


def test_clips_go_and_ncnn_computes_the_same_bits(converted):
    (narrowed, plain), (got, want) = converted
    assert narrowed.stats["quantize_clips_dropped"] == 1          # after the Sigmoid (scale 1/127)
    assert narrowed.stats["quantize_clips_narrowed"] == 2         # into the Conv and the Clip(0, 6)
    count = lambda m, op: sum(n.op == op for n in m.graph)     # noqa: E731
    assert count(plain, "Clip") - count(narrowed, "Clip") == 3   # the Clip(0, 6) layer stays, narrowed
    conv = next(n for n in narrowed.graph if n.op == "Convolution")
    assert conv.params[9] == 3 and conv.params[8] == 1
    assert np.abs(got).max() > 0 and got.tobytes() == want.tobytes()


def test_interpreter_matches_and_onnxruntime_is_as_close(converted):
    (narrowed, plain), (got, _) = converted
    ours = narrowed.run({"x": X[0]}, layout="ncnn")
    np.testing.assert_array_equal(next(iter(ours.values())), got)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    spec = ort.InferenceSession(qdq_chain_model().SerializeToString(), options).run(None, {"x": X})[0][0]
    before = next(iter(plain.run({"x": X[0]}, layout="ncnn").values()))
    # the int8 Conv rounds input ties away from zero where ONNX rounds them to even: the same
    # elements move by the same steps with and without the pass
    assert np.array_equal(np.abs(got - spec) > 0, np.abs(before - spec) > 0)


@pytest.mark.parametrize("q,r", [(127, 3.63421559), (-128, 3.63421559), (127, 1 / 0.07), (255, 11.3), (127, 127.0)])
def test_bound_rounds_exactly_to_the_limit(q, r):
    bound = _bound(q, r)
    assert _rounded(bound, r) == q and np.float32(bound) == bound


def test_a_producer_that_is_a_graph_output_keeps_its_values():
    """qdq_chain_model with the Conv's output `a` also a graph output: its quantizer's clip must not
    move into the Conv, or `a` would come out clipped (inputs beyond the calibrated range reach it)."""
    model = qdq_chain_model()
    model.graph.output.append(onnx.helper.make_tensor_value_info("a", onnx.TensorProto.FLOAT, [1, 8, 6, 7]))
    graph = load_onnx(model)
    converted = NcnnModel(graph, run_pipeline(graph))
    assert converted.stats.get("quantize_clips_narrowed", 0) == 1          # the Clip(0, 6) only
    conv = next(n for n in converted.graph if n.op == "Convolution")
    assert conv.params.get(9, 0) != 3
    got = converted.run({"x": X})["a"]
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    want = ort.InferenceSession(model.SerializeToString(), options).run(["a"], {"x": X})[0]
    hi = 127 * 0.1                                                          # the quantizer of `a`: scale 0.1
    assert want.max() > hi + 1 and np.abs(got - want).max() < 0.05 * np.abs(want).max()


def test_bound_beyond_float32_is_none():
    """An attention mask's -3.4e38 quantized at a scale that covers it (DistilBERT, quantize_static's
    Where): -128 / r is beyond float32, and the search for the bound used to spin forever."""
    r = 128 / 3.4e38
    assert _bound(-128, r) is None or _rounded(_bound(-128, r), r) == -128
    assert _bound(-128, 127.5 / 3.4028235e38) is None
