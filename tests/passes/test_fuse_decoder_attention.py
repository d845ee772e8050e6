"""fuse_decoder_attention: a decoder's masked attention over its cache, grouped-query heads
repeated by HF's repeat_kv, becomes one ncnn SDPA reading the kv heads (real ncnn and the
interpreter against onnxruntime, at run-time lengths), and stays written out where SDPA's 2-D mask
could not hold the mask."""
import numpy as np
import pytest
from onnx import helper

from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model
from onnx_cases import ncnn_layer_types as layers

D = 8


def attention(heads=4, groups=2, mask_rows="T", mask_heads=1, softmax_axis=-1):
    """q (1, H, T, D), k/v (1, G, S, D) repeated to H heads, scores * 0.25 + mask (1, mh, rows, S)."""
    r = heads // groups
    inits = [("two", np.array([2], np.int64)), ("rep", np.array([1, 1, r, 1, 1], np.int64)),
             ("heads", np.array([1, heads, -1, D], np.int64)), ("scale", np.array(0.25, np.float32))]
    nodes = []
    for name in ("k", "v"):
        if r == 1:
            nodes.append(helper.make_node("Identity", [name], [f"{name}4"]))
            continue
        nodes += [helper.make_node("Unsqueeze", [name, "two"], [f"{name}5"]),
                  helper.make_node("Expand", [f"{name}5", "rep"], [f"{name}x"]),
                  helper.make_node("Reshape", [f"{name}x", "heads"], [f"{name}4"])]
    nodes += [helper.make_node("Transpose", ["k4"], ["kt"], perm=[0, 1, 3, 2]),
              helper.make_node("MatMul", ["q", "kt"], ["qk"]),
              helper.make_node("Mul", ["qk", "scale"], ["scaled"]),
              helper.make_node("Add", ["scaled", "mask"], ["scores"]),
              helper.make_node("Softmax", ["scores"], ["p"], axis=softmax_axis),
              helper.make_node("MatMul", ["p", "v4"], ["y"])]
    inputs = [("q", [1, heads, "T", D]), ("k", [1, groups, "S", D]), ("v", [1, groups, "S", D]),
              ("mask", [1, mask_heads, mask_rows, "S"])]
    return make_model(nodes, inputs, [("y", [1, heads, "T", D])], inits)


def check(model, tmp_path, fired):
    converted = check_in_ncnn(model, tmp_path, dims={"T": 3, "S": 7})
    assert converted.stats["decoder_attention_fused"] == int(fired)
    types = layers(converted)
    if fired:
        assert types.count("SDPA") == 1 and not {"MatMul", "Softmax", "Tile"} & set(types), types
    else:
        assert "SDPA" not in types, types
    check_interpreter_matches_ncnn(converted, model, tmp_path)


FIRES = {"grouped-query heads (4 over 2)": {}, "one kv head per head": {"groups": 4},
         "multi-query (4 over 1)": {"groups": 1}}


@pytest.mark.parametrize("variant", FIRES.values(), ids=FIRES.keys())
def test_decoder_attention_fuses(variant, tmp_path):
    check(attention(**variant), tmp_path, True)


MISSES = {"one mask row for every query row": {"mask_rows": 1}, "a mask per head": {"mask_heads": 4},
          "softmax over the query axis": {"softmax_axis": 2}}


@pytest.mark.parametrize("variant", MISSES.values(), ids=MISSES.keys())
def test_decoder_attention_near_misses_stay_unfused(variant, tmp_path):
    check(attention(**variant), tmp_path, False)
