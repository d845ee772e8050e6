"""The interpreter's fp16 storage emulation against the real ncnn with fp16 on.

On x86 the pip runtime keeps blobs in fp32 under use_fp16_storage; its InnerProduct does store
its weights in fp16 (F16C). So: InnerProduct weights that fp16 rounds must give the same numbers
in both; a chain of other layers must agree within fp16's rounding tolerance."""
import numpy as np
import pytest
from onnx import helper

from converter import convert
from converter.verification.fp16 import tolerance
from converter.interpreter import run
from converter.ncnn_side.runtime import run_ncnn
from onnx_cases import make_model, ncnn_layer_types, to_ncnn

K, N = 16, 8


def saved(model, tmp_path):
    converted = convert(model)
    param, bin_ = tmp_path / "m.param", tmp_path / "m.bin"
    converted.save(param, bin_)
    return converted, param, bin_


def both(converted, param, bin_, feeds, precision):
    io = converted.io()
    ncnn_feeds = {e["ncnn"]: to_ncnn(feeds[e["onnx"]], e) for e in io["inputs"]}
    out = io["outputs"][0]["ncnn"]
    real = run_ncnn(param, bin_, ncnn_feeds, [out], precision)[out]
    ours = run(converted.graph, ncnn_feeds, [out], fp16=precision == "fp16")[out]
    return real, ours


def test_innerproduct_weights_round_as_real_ncnn_stores_them(tmp_path):
    """Weights k * (1 + 2**-13) are k in fp16, by rounding to nearest (the emulation, ARM) and by
    truncation (x86's InnerProduct: _MM_FROUND_TRUNC) alike; inputs are multiples of 1/8 and the
    sums stay exact in fp16, so the emulation and the real runtime must agree exactly."""
    w = np.full((N, K), 1.0 + 2.0 ** -13, np.float32) * np.arange(1, N + 1, dtype=np.float32)[:, None]
    model = make_model([helper.make_node("Gemm", ["x", "w"], ["y"], transB=1, name="fc")],
                       [("x", [1, K])], [("y", [1, N])], [("w", w)])
    converted, param, bin_ = saved(model, tmp_path)
    assert "InnerProduct" in ncnn_layer_types(converted)
    x = (np.random.default_rng(0).integers(0, 8, (1, K)) / 8).astype(np.float32)
    real16, ours16 = both(converted, param, bin_, {"x": x}, "fp16")
    real32, ours32 = both(converted, param, bin_, {"x": x}, "fp32")
    np.testing.assert_array_equal(ours16, real16)
    np.testing.assert_array_equal(ours32, real32)
    assert np.abs(real16 - real32).max() > 1e-3      # the real runtime did round the weights


@pytest.mark.parametrize("seed", [0, 1])
def test_a_conv_chain_within_fp16_rounding(tmp_path, seed):
    rng = np.random.default_rng(seed)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Sigmoid", ["c"], ["s"], name="sig"),
             helper.make_node("Mul", ["c", "s"], ["y0"], name="swish"),
             helper.make_node("MaxPool", ["y0"], ["y"], kernel_shape=[2, 2], strides=[2, 2], name="pool")]
    consts = [("w", rng.uniform(-0.5, 0.5, (6, 3, 3, 3)).astype(np.float32)),
              ("b", rng.uniform(-0.1, 0.1, (6,)).astype(np.float32))]
    model = make_model(nodes, [("x", [1, 3, 10, 10])], [("y", [1, 6, 5, 5])], consts)
    converted, param, bin_ = saved(model, tmp_path)
    x = rng.uniform(-1, 1, (1, 3, 10, 10)).astype(np.float32)
    real, ours = both(converted, param, bin_, {"x": x}, "fp16")
    error = np.abs(ours - real).max() / np.abs(real).max()
    assert 0 < error <= tolerance(4), error        # rounded, and within four layers' rounding


def test_x86_innerproduct_truncates_its_fp16_weights(tmp_path):
    """A fact the emulation does not copy (it rounds to nearest, as ARM's conversions do): on x86
    the real InnerProduct truncates; 1 + 5*2**-13 is nearer 1 + 2**-10 but becomes 1."""
    import platform
    if platform.machine() != "x86_64":
        pytest.skip("x86's InnerProduct only")
    w = np.full((N, K), 1.0 + 5 * 2.0 ** -13, np.float32)
    model = make_model([helper.make_node("Gemm", ["x", "w"], ["y"], transB=1, name="fc")],
                       [("x", [1, K])], [("y", [1, N])], [("w", w)])
    converted, param, bin_ = saved(model, tmp_path)
    x = np.ones((1, K), np.float32)
    real16, ours16 = both(converted, param, bin_, {"x": x}, "fp16")
    np.testing.assert_array_equal(real16, np.full(N, K, np.float32))           # truncated: 16 * 1
    np.testing.assert_array_equal(ours16, np.full(N, K * (1 + 2.0 ** -10), np.float32))   # nearest
