"""The bundled BERT- and ViT-style encoders (scripts/build_transformers.py): converted once, run
in real ncnn and the interpreter on several inputs, each output within
|ncnn - ort| <= 1e-3 * max|ort| + 1e-3 * |ort| of onnxruntime."""
import numpy as np
import onnx
import pytest

from converter import convert
from converter.ncnn_side.runtime import run_ncnn
from tests.onnx_cases import MODELS, ncnn_layer_types, onnxruntime_outputs, to_ncnn


def bert_feeds(rng):
    mask = np.ones((1, 8), np.int64)
    mask[0, rng.integers(3, 8):] = 0          # right padding of a random length
    return {"input_ids": rng.integers(0, 50, (1, 8)).astype(np.int64), "attention_mask": mask}


def vit_feeds(rng):
    return {"pixel_values": rng.uniform(-1, 1, (1, 3, 32, 32)).astype(np.float32)}


def within_tolerance(got, want):
    return np.all(np.abs(got - want) <= 1e-3 * np.abs(want).max() + 1e-3 * np.abs(want))


@pytest.mark.parametrize("name, make_feeds, layer", [("bert_tiny", bert_feeds, "Embed"),
                                                     ("vit_tiny", vit_feeds, "Convolution")])
def test_encoder(tmp_path, name, make_feeds, layer):
    model = onnx.load(str(MODELS / f"{name}.onnx"))
    converted = convert(model)
    assert layer in ncnn_layer_types(converted)
    param, bin_ = tmp_path / "m.param", tmp_path / "m.bin"
    converted.save(param, bin_)
    io = converted.io()
    rng = np.random.default_rng(0)
    for _ in range(3):
        feeds = make_feeds(rng)
        expected = onnxruntime_outputs(model, feeds)
        ncnn_feeds = {e["ncnn"]: to_ncnn(feeds[e["onnx"]], e) for e in io["inputs"]}
        outs = [e["ncnn"] for e in io["outputs"]]
        real, ours = run_ncnn(param, bin_, ncnn_feeds, outs), converted.run(ncnn_feeds, layout="ncnn")
        for entry in io["outputs"]:
            want = expected[entry["onnx"]]
            assert within_tolerance(real[entry["ncnn"]].reshape(want.shape), want), (entry["onnx"], real, want)
            assert within_tolerance(ours[entry["ncnn"]].reshape(want.shape), want), (entry["onnx"], ours, want)


def test_bert_ids_are_int32_and_the_mask_float():
    io = convert(str(MODELS / "bert_tiny.onnx")).io()
    assert {e["onnx"]: e["dtype"] for e in io["inputs"]} == {"input_ids": "int32", "attention_mask": "float32"}


@pytest.mark.parametrize("name", ["bert_tiny", "vit_tiny"])
def test_bundled_models_are_small(name):
    assert (MODELS / f"{name}.onnx").stat().st_size < 200_000
