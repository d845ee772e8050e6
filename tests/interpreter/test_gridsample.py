"""GridSample against the real ncnn: every sample type, padding mode, align_corner and grid
layout, on 2-D and 3-D images."""
import numpy as np
import pytest

from converter.interpreter import InterpreterError
from converter.ncnn_side.runtime import NcnnError

from .layer_check import check, ids, interpret, run_real, one_layer_graph

BILINEAR, NEAREST, BICUBIC = 1, 2, 3


def grid_for(rng, out_spatial, n, permute_fusion, low=-1.3, high=1.3):
    grid = rng.uniform(low, high, (*out_spatial, n)).astype(np.float32)
    return np.moveaxis(grid, -1, 0).copy() if permute_fusion else grid


def params(sample_type, padding_mode, align_corner, permute_fusion):
    return ids("GridSample", sample_type=sample_type, padding_mode=padding_mode,
               align_corner=align_corner, permute_fusion=permute_fusion)


@pytest.mark.parametrize("padding_mode", [1, 2, 3], ids=["zeros", "border", "reflection"])
@pytest.mark.parametrize("sample_type", [BILINEAR, NEAREST, BICUBIC], ids=["bilinear", "nearest", "bicubic"])
def test_grid_sample_2d(tmp_path, rng, sample_type, padding_mode):
    x = rng.uniform(-3, 3, (3, 5, 6)).astype(np.float32)
    for align in (0, 1):
        for fusion in (0, 1):
            # 4 x 11 points: SIMD blocks of 8 plus a scalar tail per row
            grid = grid_for(rng, (4, 11), 2, fusion)
            check(tmp_path, "GridSample", params(sample_type, padding_mode, align, fusion), [x, grid])


@pytest.mark.parametrize("padding_mode", [1, 2, 3], ids=["zeros", "border", "reflection"])
@pytest.mark.parametrize("sample_type", [BILINEAR, NEAREST], ids=["bilinear", "nearest"])
def test_grid_sample_3d(tmp_path, rng, sample_type, padding_mode):
    x = rng.uniform(-3, 3, (2, 4, 5, 6)).astype(np.float32)
    for align in (0, 1):
        for fusion in (0, 1):
            grid = grid_for(rng, (3, 2, 9), 3, fusion)
            check(tmp_path, "GridSample", params(sample_type, padding_mode, align, fusion), [x, grid])


def test_default_sample_type_is_bilinear(tmp_path, rng):
    # operators.md calls 1 nearest; the code (and the runtime) make 1 bilinear
    x = rng.uniform(-3, 3, (2, 5, 6)).astype(np.float32)
    grid = grid_for(rng, (3, 4), 2, 0)
    ours = check(tmp_path, "GridSample", {}, [x, grid])["out0"]
    np.testing.assert_allclose(ours, interpret("GridSample", params(BILINEAR, 1, 0, 0), [x, grid])["out0"])


def test_bicubic_3d_is_refused(tmp_path, rng):
    x = rng.uniform(-3, 3, (2, 4, 5, 6)).astype(np.float32)
    grid = grid_for(rng, (3, 2, 4), 3, 0)
    with pytest.raises(NcnnError):
        check(tmp_path, "GridSample", params(BICUBIC, 1, 0, 0), [x, grid])
    with pytest.raises(InterpreterError, match="bicubic on a 4-D blob"):
        interpret("GridSample", params(BICUBIC, 1, 0, 0), [x, grid])


def test_reflection_past_twice_the_image_is_refused(tmp_path, rng):
    # 9 identical points: the 8 in ncnn's SIMD block read 0, the scalar 9th clamps and reads a pixel
    x = rng.uniform(1, 3, (1, 5, 6)).astype(np.float32)
    grid = np.full((2, 1, 9), 4.0, np.float32)
    graph, feeds = one_layer_graph("GridSample", params(BILINEAR, 3, 1, 1), [x, grid])
    real = run_real(tmp_path, graph, feeds)["out0"].ravel()
    assert np.all(real[:8] == 0) and real[8] != 0
    with pytest.raises(InterpreterError, match="reaches past twice the image"):
        interpret("GridSample", params(BILINEAR, 3, 1, 1), [x, grid])
