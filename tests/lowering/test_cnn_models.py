"""End to end: models/cnn_small.onnx and models/cnn_dynamic.onnx in the real ncnn runtime."""
from collections import Counter

import numpy as np
import onnx
import pytest

from converter import convert
from converter.ncnn_side.runtime import run_ncnn
from onnx_cases import MODELS, assert_matches_reference, check_in_ncnn, random_inputs


def test_cnn_small(tmp_path):
    model = onnx.load(MODELS / "cnn_small.onnx")
    converted = check_in_ncnn(model, tmp_path)
    layers = Counter(n.op for n in converted.graph.nodes.values())
    assert converted.stats["conv_bn_fused"] == 2 and converted.stats["swish_fused"] == 1
    assert layers["BatchNorm"] == 0 and layers["Sigmoid"] == 0 and layers["Swish"] == 1
    assert layers["Convolution"] == 8 and layers["ConvolutionDepthWise"] == 1


@pytest.fixture(scope="module")
def dynamic_files(tmp_path_factory):
    """cnn_dynamic converted once, without --input-shape."""
    folder = tmp_path_factory.mktemp("cnn_dynamic")
    converted = convert(MODELS / "cnn_dynamic.onnx")
    param, bin_ = folder / "m.param", folder / "m.bin"
    converted.save(param, bin_)
    return converted, param, bin_


def test_cnn_dynamic_converts_without_input_shape(dynamic_files):
    converted, _, _ = dynamic_files
    entry = converted.io()["inputs"][0]
    assert entry["ncnn_shape"] == [3, None, None] and entry["batch_axis"] == 0
    assert converted.stats["conv_bn_fused"] == 1


@pytest.mark.parametrize("h, w", [(16, 16), (24, 20), (32, 40)])
def test_cnn_dynamic_same_files_every_size(dynamic_files, h, w):
    converted, param, bin_ = dynamic_files
    model = onnx.load(MODELS / "cnn_dynamic.onnx")
    feeds = random_inputs(model, seed=h * w, dims={"H": h, "W": w})
    io = converted.io()
    src, dst = io["inputs"][0]["ncnn"], io["outputs"][0]["ncnn"]
    got = run_ncnn(param, bin_, {src: np.squeeze(feeds["input"], 0)}, [dst])[dst]
    assert got.shape == (5,)
    assert_matches_reference(model, feeds, {"logits": got})
