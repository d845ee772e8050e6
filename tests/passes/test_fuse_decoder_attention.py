"""fuse_decoder_attention: a decoder's attention over its cache, grouped-query heads repeated by HF's
repeat_kv, becomes one ncnn SDPA reading the kv heads (real ncnn and the interpreter against
onnxruntime, at run-time lengths), with what is added to the scaled scores (a mask, a per-head
position bias, their sum; zeros dropped) as SDPA's additive mask; it stays written out where SDPA
would read the mask otherwise (one row or one column broadcast, a mask added before the scale) or
where the target release computes masked SDPA wrongly."""
import numpy as np
import pytest
from onnx import helper

from converter import convert
from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model
from onnx_cases import ncnn_layer_types as layers

D = 8


def attention(heads=4, groups=2, mask_rows="T", mask_heads=1, softmax_axis=-1, masks=("mask",),
              mask_cols="S", before_scale=False, zeros=False, split_heads=False, softcap=False):
    """q (1, H, T, D), k/v (1, G, S, D) repeated to H heads, scores * 0.25 + each mask (1, mh, rows, S)
    in turn (T5: a per-head bias, then the padding mask), + zeros of the scores' shape if `zeros`;
    `split_heads`: k and v come as (1, S, H, D) and one Transpose writes k^T (T5's encoder); `softcap`:
    the scaled scores capped as Gemma2 caps them, tanh(s / 2) * 2, before the masks."""
    r = heads // groups
    inits = [("two", np.array([2], np.int64)), ("rep", np.array([1, 1, r, 1, 1], np.int64)),
             ("heads", np.array([1, heads, -1, D], np.int64)), ("scale", np.array(0.25, np.float32)),
             ("zero", np.array([0.0], np.float32)), ("cap", np.array(2.0, np.float32))]
    nodes = []
    for name in ("k", "v") if not split_heads else ():
        if r == 1:
            nodes.append(helper.make_node("Identity", [name], [f"{name}4"]))
            continue
        nodes += [helper.make_node("Unsqueeze", [name, "two"], [f"{name}5"]),
                  helper.make_node("Expand", [f"{name}5", "rep"], [f"{name}x"]),
                  helper.make_node("Reshape", [f"{name}x", "heads"], [f"{name}4"])]
    if split_heads:
        nodes.append(helper.make_node("Transpose", ["v"], ["v4"], perm=[0, 2, 1, 3]))
    nodes += [helper.make_node("Transpose", ["k" if split_heads else "k4"], ["kt"],
                               perm=[0, 2, 3, 1] if split_heads else [0, 1, 3, 2]),
              helper.make_node("MatMul", ["q", "kt"], ["qk"])]
    scores = "qk"
    if before_scale:            # (qk + mask) * scale: SDPA adds its mask after the scale
        nodes.append(helper.make_node("Add", [scores, masks[0]], ["masked"]))
        nodes.append(helper.make_node("Mul", ["masked", "scale"], ["scores0"]))
    else:
        nodes.append(helper.make_node("Mul", [scores, "scale"], ["scores0" if not softcap else "scaled"]))
        if softcap:
            nodes += [helper.make_node("Div", ["scaled", "cap"], ["capped"]),
                      helper.make_node("Tanh", ["capped"], ["tanh"]),
                      helper.make_node("Mul", ["tanh", "cap"], ["scores0"])]
        for i, m in enumerate(masks):
            nodes.append(helper.make_node("Add", [f"scores{i}", m], [f"scores{i + 1}"]))
    scores = f"scores{0 if before_scale else len(masks)}"
    if zeros:
        nodes += [helper.make_node("Shape", [scores], ["shape"]),
                  helper.make_node("ConstantOfShape", ["shape"], ["zeros"]),
                  helper.make_node("Add", [scores, "zeros"], ["scores_z"])]
        scores = "scores_z"
    nodes += [helper.make_node("Softmax", [scores], ["p"], axis=softmax_axis),
              helper.make_node("MatMul", ["p", "v4"], ["y"])]
    shapes = {"mask": [1, mask_heads, mask_rows, mask_cols], "bias": [1, heads, "T", "S"]}
    kv = [1, "S", heads, D] if split_heads else [1, groups, "S", D]
    inputs = [("q", [1, heads, "T", D]), ("k", kv), ("v", kv),
              *[(m, shapes[m]) for m in masks]]
    return make_model(nodes, inputs, [("y", [1, heads, "T", D])], inits)


def batched_heads(heads=4, t=3):
    """BART-style attention (TrOCR's decoder): heads as a batch (H, T, D) x (H, D, S), the scores made
    (1, H, T, S) around the mask by Reshapes and back."""
    inits = [("up", np.array([1, heads, t, -1], np.int64)), ("down", np.array([heads, t, -1], np.int64))]
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["q", "kt"], ["qk"]),
             helper.make_node("Reshape", ["qk", "up"], ["qk4"]),
             helper.make_node("Add", ["qk4", "mask"], ["s4"]),
             helper.make_node("Reshape", ["s4", "down"], ["s"]),
             helper.make_node("Softmax", ["s"], ["p"], axis=-1),
             helper.make_node("MatMul", ["p", "v"], ["y"])]
    inputs = [("q", [heads, t, D]), ("k", [heads, "S", D]), ("v", [heads, "S", D]), ("mask", [1, 1, t, "S"])]
    return make_model(nodes, inputs, [("y", [heads, t, D])], inits)


def check(model, tmp_path, fired, mask_dims=None):
    converted = check_in_ncnn(model, tmp_path, dims={"T": 3, "S": 7})
    assert converted.stats["decoder_attention_fused"] == int(fired)
    types = layers(converted)
    if fired:
        assert types.count("SDPA") == 1 and not {"MatMul", "Softmax", "Tile"} & set(types), types
        sdpa = next(n for n in converted.graph.nodes.values() if n.op == "SDPA")
        assert sdpa.params[5] == (mask_dims is not None)
        if mask_dims is not None:         # the mask as ncnn's SDPA reads it: (T, S) or (H, T, S)
            assert len(converted.graph.tensors[sdpa.inputs[3]].ncnn_shape) == mask_dims, \
                converted.graph.tensors[sdpa.inputs[3]].ncnn_shape
    else:
        assert "SDPA" not in types, types
    check_interpreter_matches_ncnn(converted, model, tmp_path)


FIRES = {"grouped-query heads (4 over 2)": ({}, 2), "one kv head per head": ({"groups": 4}, 2),
         "multi-query (4 over 1)": ({"groups": 1}, 2),
         "a mask per head (T5's position bias)": ({"mask_heads": 4}, 3),
         "a per-head bias then a shared mask (two Adds)": ({"masks": ("bias", "mask")}, 3),
         "zeros added (T5's cross-attention bias) are dropped": ({"zeros": True}, 2),
         "k^T written by one Transpose from (1, S, H, D)": ({"split_heads": True, "groups": 4}, 2),
         "no mask over run-time lengths (a decode step past the causal fold)": ({"masks": ()}, None)}


@pytest.mark.parametrize("variant,mask_dims", FIRES.values(), ids=FIRES.keys())
def test_decoder_attention_fuses(variant, mask_dims, tmp_path):
    check(attention(**variant), tmp_path, True, mask_dims)


def test_heads_as_a_batch_fuse_through_the_mask_reshapes(tmp_path):
    check(batched_heads(), tmp_path, True, 2)


MISSES = {"one mask row for every query row": {"mask_rows": 1}, "softmax over the query axis": {"softmax_axis": 2},
          "one mask column for every key": {"mask_cols": 1},
          "the mask added before the scale": {"before_scale": True},
          "scores capped by tanh before the mask (Gemma2's softcapping: SDPA has no cap)": {"softcap": True}}


@pytest.mark.parametrize("variant", MISSES.values(), ids=MISSES.keys())
def test_decoder_attention_near_misses_stay_unfused(variant, tmp_path):
    check(attention(**variant), tmp_path, False)


def test_older_releases_keep_masked_attention_written_out():
    """Masked SDPA computes other numbers in 20260526 (converter/ncnn_side/releases.py); SDPA itself
    is younger than 20250503: the unmasked form fuses only where the layer exists."""
    masked, unmasked = attention(), attention(masks=())
    assert convert(masked, target_ncnn=20260526).stats["decoder_attention_fused"] == 0
    assert convert(unmasked, target_ncnn=20260526).stats["decoder_attention_fused"] == 1
    older = convert(unmasked, target_ncnn=20250503)
    assert "decoder_attention_fused" not in older.stats and "SDPA" not in layers(older)
