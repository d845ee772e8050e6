"""fuse_channel_shuffle: ShuffleNet's channel shuffle (Reshape -> Transpose -> Reshape) becomes one ncnn
ShuffleChannel that matches onnxruntime in the real ncnn and the interpreter; near misses stay as
they were (and still match)."""
import numpy as np
import pytest
from onnx import helper

from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model
from onnx_cases import ncnn_layer_types as layers


def shuffle(shape=(1, 12, 3, 4), groups=3, perm=None, back=None, extra_output=False):
    """y = channel_shuffle(x, groups) as torch writes it; the keywords pick variants."""
    split = [shape[0], groups, shape[1] // groups, *shape[2:]]
    perm = perm or [0, 2, 1, *range(3, len(split))]
    inits = [("split", np.array(split, np.int64)), ("back", np.array(back or shape, np.int64))]
    nodes = [helper.make_node("Relu", ["x"], ["a"]),       # a layer before, so x is no bare input
             helper.make_node("Reshape", ["a", "split"], ["s"]),
             helper.make_node("Transpose", ["s"], ["t"], perm=perm),
             helper.make_node("Reshape", ["t", "back"], ["y0"]),
             helper.make_node("Sigmoid", ["y0"], ["y"])]
    outputs = [("y", None)] + ([("t", None)] if extra_output else [])
    return make_model(nodes, [("x", list(shape))], outputs, inits)


FIRES = {
    "3 groups": {},
    "2 groups of 6": {"groups": 2},
    "groups of one channel": {"groups": 12},
    "depth and spatial axes": {"shape": (1, 6, 2, 3, 4), "groups": 2},
}


@pytest.mark.parametrize("variant", FIRES.values(), ids=FIRES.keys())
def test_channel_shuffle_fuses(variant, tmp_path):
    model = shuffle(**variant)
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["channel_shuffle_fused"] == 1
    types = layers(converted)
    assert types.count("ShuffleChannel") == 1 and not {"Reshape", "Permute"} & set(types), types
    check_interpreter_matches_ncnn(converted, model, tmp_path)


NEAR_MISSES = {
    "H and W swapped too": {"perm": [0, 2, 1, 4, 3]},
    "shaped back to other axes": {"back": [1, 12, 12]},
    "transposed tensor also an output": {"extra_output": True},
    "one axis after the channels (ncnn: a 2-D blob)": {"shape": (1, 8, 10), "groups": 2},
}


@pytest.mark.parametrize("variant", NEAR_MISSES.values(), ids=NEAR_MISSES.keys())
def test_channel_shuffle_near_misses_stay(variant, tmp_path):
    model = shuffle(**variant)
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["channel_shuffle_fused"] == 0
    assert "ShuffleChannel" not in layers(converted)
    check_interpreter_matches_ncnn(converted, model, tmp_path)
