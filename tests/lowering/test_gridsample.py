"""GridSample -> ncnn GridSample: every mode, padding mode and align_corners, 2-D and 3-D, real ncnn
and the interpreter against onnxruntime, with grids reaching far outside [-1, 1] and exact
nearest-rounding ties."""
import numpy as np
import pytest
from onnx import helper

from converter import convert
from converter.ir import ConversionError
from onnx_cases import check_in_ncnn, make_model, ncnn_layer_types, onnxruntime_outputs, to_ncnn

MODES = ["bilinear", "nearest", "bicubic"]
PADDINGS = ["zeros", "border", "reflection"]


def grid_model(x_shape, grid_shape, opset=16, **attrs):
    node = helper.make_node("GridSample", ["x", "grid"], ["y"], **attrs)
    return make_model([node], [("x", x_shape), ("grid", grid_shape)], [("y", None)], opset=opset)


def check(model, feeds, tmp_path, **convert_args):
    """Real ncnn and the interpreter against onnxruntime; returns the conversion."""
    converted = check_in_ncnn(model, tmp_path, feeds=feeds, rtol=1e-4, atol=2e-5, **convert_args)
    io = converted.io()
    ours = converted.run({e["ncnn"]: to_ncnn(feeds[e["onnx"]], e) for e in io["inputs"]}, layout="ncnn")["y"]
    want = onnxruntime_outputs(model, feeds)["y"]
    np.testing.assert_allclose(ours.reshape(want.shape), want, rtol=1e-4, atol=2e-5)
    assert "GridSample" in ncnn_layer_types(converted)
    return converted


def feeds_for(x_shape, grid_shape, seed=0, reach=3.5):
    rng = np.random.default_rng(seed)
    return {"x": rng.uniform(-3, 3, x_shape).astype(np.float32),
            "grid": rng.uniform(-reach, reach, grid_shape).astype(np.float32)}


@pytest.mark.parametrize("align", [0, 1])
@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("mode", MODES)
def test_grid_sample_2d(mode, padding, align, tmp_path):
    # 4 x 11 points: ncnn's SIMD blocks of 8 and a scalar tail per row
    x_shape, grid_shape = (1, 3, 5, 6), (1, 4, 11, 2)
    model = grid_model(x_shape, grid_shape, mode=mode, padding_mode=padding, align_corners=align)
    check(model, feeds_for(x_shape, grid_shape), tmp_path)


@pytest.mark.parametrize("align", [0, 1])
@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("mode", ["linear", "nearest"])
def test_grid_sample_3d(mode, padding, align, tmp_path):
    x_shape, grid_shape = (1, 2, 4, 5, 6), (1, 3, 2, 9, 3)
    model = grid_model(x_shape, grid_shape, opset=20, mode=mode, padding_mode=padding, align_corners=align)
    check(model, feeds_for(x_shape, grid_shape), tmp_path)


@pytest.mark.parametrize("align", [0, 1])
@pytest.mark.parametrize("padding", PADDINGS)
def test_nearest_ties_round_half_to_even(padding, align, tmp_path):
    """Points exactly between two pixels: onnxruntime rounds to even, ncnn alone would round up."""
    x_shape, grid_shape = (1, 1, 4, 6), (1, 2, 9, 2)
    model = grid_model(x_shape, grid_shape, mode="nearest", padding_mode=padding, align_corners=align)
    halves = np.arange(-4, 5, dtype=np.float64) + 0.5 + 6 * (np.arange(9) % 2)      # pixel coordinates
    if align:
        gx, gy = halves / 5 * 2 - 1, np.full(9, 1.5 / 3 * 2 - 1)
    else:
        gx, gy = (2 * halves + 1) / 6 - 1, np.full(9, (2 * 1.5 + 1) / 4 - 1)
    grid = np.stack([np.stack([gx, gy], -1), np.stack([gx[::-1], -gy], -1)])[None].astype(np.float32)
    feeds = {"x": np.arange(24, dtype=np.float32).reshape(x_shape), "grid": grid}
    check(model, feeds, tmp_path)


@pytest.mark.parametrize("mode, padding", [("bilinear", "zeros"), ("nearest", "reflection")])
def test_constant_grid(mode, padding, tmp_path):
    """A fixed warp: the grid is an initializer, held by a MemoryData without its batch axis."""
    x_shape, grid_shape = (1, 2, 5, 6), (1, 3, 4, 2)
    grid = np.random.default_rng(4).uniform(-2.5, 2.5, grid_shape).astype(np.float32)
    grid[0, 0, 0] = [0.0, 0.0]                         # x = 2.5: a nearest tie (even width)
    node = helper.make_node("GridSample", ["x", "grid"], ["y"], mode=mode, padding_mode=padding)
    model = make_model([node], [("x", x_shape)], [("y", None)], [("grid", grid)], opset=16)
    check(model, {"x": np.random.default_rng(5).uniform(-3, 3, x_shape).astype(np.float32)}, tmp_path)


def test_dynamic_sizes_one_file(tmp_path):
    """bilinear needs no sizes: one file samples any image with any grid."""
    model = grid_model((1, 3, "H", "W"), (1, "h", "w", 2), align_corners=1)
    converted = convert(model)
    for seed, (x_shape, grid_shape) in enumerate([((1, 3, 7, 5), (1, 3, 4, 2)), ((1, 3, 4, 9), (1, 6, 2, 2))]):
        check(model, feeds_for(x_shape, grid_shape, seed), tmp_path / str(seed),
              input_shapes={"x": list(x_shape), "grid": list(grid_shape)})
    assert ncnn_layer_types(converted).count("GridSample") == 1


@pytest.mark.parametrize("x_shape, grid_shape, attrs, opset, why", [
    ((1, 2, 4, 5, 6), (1, 3, 2, 4, 3), dict(mode="cubic"), 20, "no trilinear-cubic"),
    ((1, 3, "H", "W"), (1, 4, 5, 2), dict(mode="nearest"), 16, "nearest sampling with run-time input sizes"),
    ((1, 3, 4, 6), (1, 4, 5, 2), dict(mode="bicubic", padding_mode="reflection"), 16, "reflects each tap once"),
], ids=["cubic_3d", "nearest_dynamic", "bicubic_reflection_small"])
def test_refused_in_one_line(x_shape, grid_shape, attrs, opset, why):
    with pytest.raises(ConversionError, match=f"GridSample node .*{why}") as info:
        convert(grid_model(x_shape, grid_shape, opset=opset, **attrs))
    assert "\n" not in str(info.value)
