"""int8 Convolution / ConvolutionDepthWise / InnerProduct (8=int8_scale_term): the interpreter
against the real ncnn, bit for bit. Inputs include values whose x * scale falls exactly on
or next to .5, where ncnn's rounding (half away from zero, in float32) shows."""
from __future__ import annotations

import numpy as np
import pytest

from converter.interpreter import run
from converter.ir import Graph, Node
from tests.interpreter.layer_check import run_real


def int8_graph(op: str, params: dict, x: np.ndarray, weight: np.ndarray, bias, weight_scales,
               bottom_scale: float) -> tuple[Graph, dict]:
    graph = Graph()
    graph.inputs, graph.outputs = ["x"], ["y"]
    graph.add_node(Node("input", "Input", [], ["x"], ncnn=True))
    weights = [weight.astype(np.int8).ravel()] + ([np.asarray(bias, np.float32)] if bias is not None else [])
    weights += [np.asarray(weight_scales, np.float32), np.array([bottom_scale], np.float32)]
    params = {**params, 8: 2 if op == "ConvolutionDepthWise" and len(weight_scales) == 1 else 1}
    if bias is not None:
        params[5 if op != "InnerProduct" else 1] = 1
    graph.add_node(Node("layer", op, ["x"], ["y"], params=params, weights=weights, ncnn=True))
    return graph, {"x": x.astype(np.float32)}


def tie_probing_input(rng, shape, bottom_scale: float) -> np.ndarray:
    """Normal values, a third moved to (k + 0.5) / scale and a third one float step off it."""
    x = rng.normal(0, 40 / bottom_scale, shape).astype(np.float32)
    ties = ((np.round(x * bottom_scale) + 0.5) / np.float32(bottom_scale)).astype(np.float32)
    pick = rng.integers(0, 3, shape)
    x = np.where(pick == 1, ties, x)
    return np.where(pick == 2, np.nextafter(ties, np.float32(0)), x).astype(np.float32)


# ncnn's x86 ConvolutionDepthWise on 8-channel packs scales by _mm_rcp_ps(bottom * weight scale),
# an approximate reciprocal (relative error up to 1.5 * 2**-12, its value depends on the CPU); the
# interpreter computes 1 / (bottom * weight scale) as the reference layer does
RCP_PS = 1.5 * 2.0 ** -12


def assert_within_one_fused_rounding(tmp_path, graph: Graph, feeds: dict, bias: np.ndarray) -> None:
    """ncnn's x86 int8 ConvolutionDepthWise on unpacked channels writes sum * scale + bias with a
    fused multiply-add in some kernels on some CPUs (measured: its 3x3 stride 1 and 2 kernels on an
    AVX-512 machine; not its 5x5, nor on an AVX2 one) and with two roundings elsewhere, as the
    interpreter does: the two differ by the product's rounding and the sum's, at most
    2**-23 * (|out| + |bias|) per value. Without a bias there is one rounding and both agree."""
    real = run_real(tmp_path, graph, feeds)["y"]
    ours = run(graph, feeds)["y"]
    room = 2.0 ** -23 * (np.abs(real) + np.abs(bias).reshape(-1, 1, 1))
    assert np.all(np.abs(ours.astype(np.float64) - real) <= room), np.abs(ours - real).max()


def assert_same(tmp_path, graph: Graph, feeds: dict, rtol: float = 0.0) -> None:
    real = run_real(tmp_path, graph, feeds)["y"]
    ours = run(graph, feeds)["y"]
    assert ours.shape == real.shape
    if rtol:
        np.testing.assert_allclose(ours, real, rtol=rtol, atol=rtol * float(np.abs(real).max()))
    else:
        np.testing.assert_array_equal(ours, real)


CONVS = [  # (op, cin, cout, kernel, stride, pad, group, activation)
    ("Convolution", 5, 7, 3, 1, 1, 1, 0),
    ("Convolution", 8, 16, 3, 2, 1, 1, 1),
    ("Convolution", 3, 4, 1, 1, 0, 1, 0),
    ("ConvolutionDepthWise", 6, 6, 3, 2, 1, 6, 0),
    ("ConvolutionDepthWise", 8, 8, 5, 1, 2, 8, 1),
]


@pytest.mark.parametrize("op,cin,cout,k,stride,pad,group,act", CONVS)
@pytest.mark.parametrize("bias", [True, False])
def test_int8_convolution_matches_ncnn(tmp_path, rng, op, cin, cout, k, stride, pad, group, act, bias):
    weight = rng.integers(-127, 128, (cout, cin // group, k, k))
    scales = rng.uniform(20, 200, group if op == "ConvolutionDepthWise" else cout)
    bottom = float(rng.uniform(5, 50))
    params = {0: cout, 1: k, 3: stride, 4: pad, 6: weight.size, 9: act}
    if op == "ConvolutionDepthWise":
        params[7] = group
    bias_values = rng.normal(0, 1, cout) if bias else None
    graph, feeds = int8_graph(op, params, tie_probing_input(rng, (cin, 9, 11), bottom), weight, bias_values,
                              scales, bottom)
    if op == "ConvolutionDepthWise" and cout % 8 == 0:
        assert_same(tmp_path, graph, feeds, RCP_PS)
    elif op == "ConvolutionDepthWise" and bias:
        assert_within_one_fused_rounding(tmp_path, graph, feeds, bias_values)
    else:
        assert_same(tmp_path, graph, feeds)


def test_int8_depthwise_one_weight_scale(tmp_path, rng):
    weight = rng.integers(-127, 128, (4, 1, 3, 3))
    graph, feeds = int8_graph("ConvolutionDepthWise", {0: 4, 1: 3, 4: 1, 6: 36, 7: 4},
                              tie_probing_input(rng, (4, 7, 7), 12.5), weight, None, [90.0], 12.5)
    assert_same(tmp_path, graph, feeds)


@pytest.mark.parametrize("shape", [(24,), (3, 24), (2, 3, 4)])
def test_int8_innerproduct_matches_ncnn(tmp_path, rng, shape):
    weight = rng.integers(-127, 128, (5, 24))
    bottom = 31.0
    graph, feeds = int8_graph("InnerProduct", {0: 5, 2: weight.size}, tie_probing_input(rng, shape, bottom),
                              weight, rng.normal(0, 1, 5), rng.uniform(20, 200, 5), bottom)
    assert_same(tmp_path, graph, feeds)
