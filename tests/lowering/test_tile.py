"""ONNX Tile in real ncnn against onnxruntime."""
import numpy as np
import pytest
from onnx import helper

from converter import ConversionError
from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model


def tile_model(x_shape, repeats):
    node = helper.make_node("Tile", ["x", "repeats"], ["y"])
    return make_model([node], [("x", x_shape)], [("y", None)], [("repeats", np.array(repeats, np.int64))])


@pytest.mark.parametrize("x_shape,repeats", [
    ((1, 3, 4, 5), [1, 2, 1, 3]), ((1, 3, 4, 5), [1, 1, 1, 1]), ((1, 6, 7), [1, 3, 2]), ((1, 9), [1, 4]),
    ((3, 4), [2, 3]), ((2, 3, 4, 5), [2, 1, 2, 1]), ((7,), [3]),
    ((1, 3, 4), [2, 1, 3]), ((1, 5), [3, 2]),                        # the batch axis repeated
    ((1, 2, 3, 4, 5), [1, 2, 1, 1, 2]),
], ids=str)
def test_tile(x_shape, repeats, tmp_path):
    model = tile_model(x_shape, repeats)
    converted = check_in_ncnn(model, tmp_path)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_tile_dynamic_extent(tmp_path):
    check_in_ncnn(tile_model([1, 3, "T"], [1, 2, 3]), tmp_path, dims={"T": 5})


def test_tile_of_the_batch_axis_of_rank5_is_refused(tmp_path):
    with pytest.raises(ConversionError, match=r"Tile node .*at most 4"):
        check_in_ncnn(tile_model((1, 2, 3, 4, 5), [2, 1, 1, 1, 1]), tmp_path)
