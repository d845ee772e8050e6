"""Tensors of 5-6 axes on the way through attention and window partitioning: merged to fit ncnn's 4,
checked in the real ncnn and the interpreter against onnxruntime; a genuine 5-axis permutation is refused."""
import numpy as np
import pytest
from onnx import helper

from converter import ConversionError, convert
from onnx_cases import (assert_matches_reference, assert_one_file_many_sizes, make_model, random_inputs,
                        run_converted_in_ncnn, to_ncnn)

RNG = np.random.default_rng(0)


def _const(name, values, dtype=np.int64):
    return name, np.asarray(values, dtype)


def _check(model, tmp_path, merged=None, **convert_args):
    """Real ncnn and the interpreter against onnxruntime; returns the conversion."""
    feeds = random_inputs(model)
    converted, outputs = run_converted_in_ncnn(model, feeds, tmp_path, **convert_args)
    assert_matches_reference(model, feeds, outputs)
    io = converted.io()
    ours = converted.run({e["ncnn"]: to_ncnn(feeds[e["onnx"]], e) for e in io["inputs"]}, layout="ncnn")
    assert_matches_reference(model, feeds, {e["onnx"]: ours[e["ncnn"]] for e in io["outputs"]})
    if merged is not None:
        assert converted.stats["merged_wide_tensors"] == merged
    return converted


def vit_qkv(tokens=5, heads=2, hd=4):
    """timm ViT attention: qkv [B,N,3C] -> [B,N,3,h,d] -> Transpose(2,0,3,1,4) -> q, k, v by Gather."""
    c = heads * hd
    w = RNG.uniform(-0.5, 0.5, (c, 3 * c)).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["qkv"]),
        helper.make_node("Reshape", ["qkv", "shape5"], ["qkv5"]),
        helper.make_node("Transpose", ["qkv5"], ["qkvT"], perm=[2, 0, 3, 1, 4]),
        helper.make_node("Gather", ["qkvT", "i0"], ["q"], axis=0),
        helper.make_node("Gather", ["qkvT", "i1"], ["k"], axis=0),
        helper.make_node("Gather", ["qkvT", "i2"], ["v"], axis=0),
        helper.make_node("Transpose", ["k"], ["kT"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q", "kT"], ["scores"]),
        helper.make_node("Softmax", ["scores"], ["attn"], axis=-1),
        helper.make_node("MatMul", ["attn", "v"], ["ctx"]),
        helper.make_node("Transpose", ["ctx"], ["ctxT"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["ctxT", "shape3"], ["y"]),
    ]
    inits = [("w", w), _const("shape5", [1, tokens, 3, heads, hd]), _const("i0", 0), _const("i1", 1),
             _const("i2", 2), _const("shape3", [1, tokens, c])]
    return make_model(nodes, [("x", [1, tokens, c])], [("y", [1, tokens, c])], inits)


def mha_unsqueeze(tokens=5, c=6):
    """torch MultiheadAttention's packed projection: [N,B,3C] -> Unflatten [N,B,3,C] -> Unsqueeze(0)
    -> Transpose(0,-2) -> Squeeze(-2) -> [3,N,B,C], then the three parts by Gather."""
    nodes = [
        helper.make_node("Reshape", ["x", "shape4"], ["x4"]),
        helper.make_node("Unsqueeze", ["x4", "ax0"], ["x5"]),
        helper.make_node("Transpose", ["x5"], ["t5"], perm=[3, 1, 2, 0, 4]),
        helper.make_node("Squeeze", ["t5", "ax3"], ["t4"]),
        helper.make_node("Gather", ["t4", "i1"], ["k"], axis=0),
        helper.make_node("Gather", ["t4", "i2"], ["v"], axis=0),
        helper.make_node("Mul", ["k", "v"], ["y"]),
    ]
    inits = [_const("shape4", [tokens, 1, 3, c]), _const("ax0", [0]), _const("ax3", [3]), _const("i1", 1),
             _const("i2", 2)]
    return make_model(nodes, [("x", [tokens, 1, 3 * c])], [("y", [tokens, 1, c])], inits)


def swin_windows(h=4, w=6, win=2, c=3):
    """Swin window partition [B,H,W,C] -> [B,H/w,w,W/w,w,C] -> Transpose(0,1,3,2,4,5) -> [nW,w*w,C],
    a per-window op, and the reverse back to [B,H,W,C]."""
    nh, nw = h // win, w // win
    nodes = [
        helper.make_node("Reshape", ["x", "part6"], ["p6"]),
        helper.make_node("Transpose", ["p6"], ["p6t"], perm=[0, 1, 3, 2, 4, 5]),
        helper.make_node("Reshape", ["p6t", "windows"], ["win"]),
        helper.make_node("Softmax", ["win"], ["att"], axis=1),
        helper.make_node("Reshape", ["att", "back6"], ["r6"]),
        helper.make_node("Transpose", ["r6"], ["r6t"], perm=[0, 1, 3, 2, 4, 5]),
        helper.make_node("Reshape", ["r6t", "image"], ["y"]),
    ]
    inits = [_const("part6", [1, nh, win, nw, win, c]), _const("windows", [-1, win * win, c]),
             _const("back6", [1, nh, nw, win, win, c]), _const("image", [1, h, w, c])]
    return make_model(nodes, [("x", [1, h, w, c])], [("y", [1, h, w, c])], inits)


def swin_mask(nw=4, heads=2, n=3):
    """Swin's shifted-window mask: attn [B*nW,h,N,N] viewed 5-D [-1,nW,h,N,N] (B from the size, so no
    batch axis) plus a constant [1,nW,1,N,N], then viewed back and normalized."""
    mask = RNG.uniform(-1, 0, (1, nw, 1, n, n)).astype(np.float32)
    nodes = [
        helper.make_node("Reshape", ["a", "view5"], ["a5"]),
        helper.make_node("Add", ["a5", "mask"], ["m5"]),
        helper.make_node("Reshape", ["m5", "view4"], ["m4"]),
        helper.make_node("Softmax", ["m4"], ["y"], axis=-1),
    ]
    inits = [_const("view5", [-1, nw, heads, n, n]), ("mask", mask), _const("view4", [-1, heads, n, n])]
    return make_model(nodes, [("a", [nw, heads, n, n])], [("y", [nw, heads, n, n])], inits)


def mobilevit_unfold(c=3, h=4, w=6, p=2):
    """Patch unfold 'b c (nh ph) (nw pw) -> b (ph pw) c (nh nw)': 6-D Reshape, Transpose, Reshape back."""
    nh, nw = h // p, w // p
    nodes = [
        helper.make_node("Reshape", ["x", "split6"], ["x6"]),
        helper.make_node("Transpose", ["x6"], ["t6"], perm=[0, 3, 5, 1, 2, 4]),
        helper.make_node("Reshape", ["t6", "patches"], ["y"]),
    ]
    inits = [_const("split6", [1, c, nh, p, nw, p]), _const("patches", [1, p * p, c, nh * nw])]
    return make_model(nodes, [("x", [1, c, h, w])], [("y", [1, p * p, c, nh * nw])], inits)


def gathered_mask(s=5, heads=2):
    """A mask gathered from a flattened attention_mask as [1,1,1,S,1], turned into an additive
    bias in 5-D, squeezed and added to the scores."""
    nodes = [
        helper.make_node("Reshape", ["mask", "flat"], ["mflat"]),
        helper.make_node("Gather", ["mflat", "idx"], ["m5"], axis=0),
        helper.make_node("Sub", ["one", "m5"], ["inv"]),
        helper.make_node("Mul", ["inv", "big"], ["bias5"]),
        helper.make_node("Squeeze", ["bias5", "last"], ["bias4"]),
        helper.make_node("Add", ["scores", "bias4"], ["y"]),
    ]
    inits = [_const("flat", [-1]), _const("idx", np.arange(s).reshape(1, 1, 1, s, 1)),
             ("one", np.float32(1)), ("big", np.float32(-100)), _const("last", [4])]
    return make_model(nodes, [("mask", [1, s]), ("scores", [1, heads, s, s])], [("y", [1, heads, s, s])], inits)


def channel_shuffle_pick(c=24, h=5, w=6):
    """ShuffleNetV2's shuffle then a pick of each half: [1,C,H,W] -> [C/2,2,HW] -> Transpose -> [2,1,C/2,H,W]
    -> Gather 0 / 1. The picked halves fit as [1,C/2,H,W] only if they merge like their source: a
    Reshape gives them back their own shape for the Relu."""
    nodes = [
        helper.make_node("Reshape", ["x", "pairs"], ["p"]),
        helper.make_node("Transpose", ["p"], ["t"], perm=[1, 0, 2]),
        helper.make_node("Reshape", ["t", "halves"], ["h5"]),
        helper.make_node("Gather", ["h5", "i0"], ["a"], axis=0),
        helper.make_node("Gather", ["h5", "i1"], ["b"], axis=0),
        helper.make_node("Relu", ["a"], ["ya"]),
        helper.make_node("Sigmoid", ["b"], ["yb"]),
    ]
    inits = [_const("pairs", [c // 2, 2, h * w]), _const("halves", [2, 1, c // 2, h, w]), _const("i0", 0),
             _const("i1", 1)]
    return make_model(nodes, [("x", [1, c, h, w])], [("ya", [1, c // 2, h, w]), ("yb", [1, c // 2, h, w])], inits)


def unfold_gathers(c=2, size=6, k=3):
    """torch's F.unfold as exported: Gather rows [k, L], then columns [k, L] (6-D), Transpose, Reshape
    to [1, C*k*k, L*L]."""
    n = size - k + 1
    idx = np.arange(k)[:, None] + np.arange(n)[None, :]
    nodes = [
        helper.make_node("Gather", ["x", "rows"], ["r5"], axis=2),
        helper.make_node("Gather", ["r5", "cols"], ["c6"], axis=4),
        helper.make_node("Transpose", ["c6"], ["t6"], perm=[0, 1, 2, 4, 3, 5]),
        helper.make_node("Reshape", ["t6", "flat"], ["y"]),
    ]
    inits = [_const("rows", idx), _const("cols", idx), _const("flat", [1, c * k * k, n * n])]
    return make_model(nodes, [("x", [1, c, size, size])], [("y", [1, c * k * k, n * n])], inits)


def mobilevit_block(c=4, h=4, w=4, p=2, heads=2):
    """timm's MobileViT block: unfold [1,C,H,W] into [P, N, C] patches (the batch folds into other axes),
    attention with a 5-D qkv, fold back to [1,C,H,W] for a Conv: the literal 1 leading the fold's
    Reshape target is the batch axis again (converter/shapes/batch_axis.py), so the Conv runs."""
    nh, nw, n, patch = h // p, w // p, (h // p) * (w // p), p * p
    hd = c // heads
    conv = lambda name, x, y: helper.make_node("Conv", [x, name], [y])   # noqa: E731
    nodes = [
        conv("w_in", "x", "f"),
        helper.make_node("Reshape", ["f", "rows"], ["f4"]),
        helper.make_node("Transpose", ["f4"], ["f4t"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["f4t", "bcnp"], ["bcnp_"]),
        helper.make_node("Transpose", ["bcnp_"], ["bpnc"], perm=[0, 3, 2, 1]),
        helper.make_node("Reshape", ["bpnc", "pnc"], ["tokens"]),
        helper.make_node("MatMul", ["tokens", "w_qkv"], ["qkv"]),
        helper.make_node("Reshape", ["qkv", "qkv5"], ["q5"]),
        helper.make_node("Transpose", ["q5"], ["q5t"], perm=[2, 0, 3, 1, 4]),
        helper.make_node("Gather", ["q5t", "i0"], ["q"], axis=0),
        helper.make_node("Gather", ["q5t", "i1"], ["k"], axis=0),
        helper.make_node("Gather", ["q5t", "i2"], ["v"], axis=0),
        helper.make_node("Transpose", ["k"], ["kT"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q", "kT"], ["scores"]),
        helper.make_node("Softmax", ["scores"], ["attn"], axis=-1),
        helper.make_node("MatMul", ["attn", "v"], ["ctx"]),
        helper.make_node("Transpose", ["ctx"], ["ctxT"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["ctxT", "pnc"], ["out_tokens"]),
        helper.make_node("Reshape", ["out_tokens", "bpnc_shape"], ["back4"]),
        helper.make_node("Transpose", ["back4"], ["back4t"], perm=[0, 3, 2, 1]),
        helper.make_node("Reshape", ["back4t", "rows"], ["g4"]),
        helper.make_node("Transpose", ["g4"], ["g4t"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["g4t", "image"], ["img"]),
        conv("w_out", "img", "y"),
    ]
    inits = [("w_in", RNG.uniform(-1, 1, (c, c, 1, 1)).astype(np.float32)),
             ("w_out", RNG.uniform(-1, 1, (c, c, 1, 1)).astype(np.float32)),
             ("w_qkv", RNG.uniform(-0.5, 0.5, (c, 3 * c)).astype(np.float32)),
             _const("rows", [c * nh, p, nw, p]), _const("bcnp", [1, c, n, patch]), _const("pnc", [patch, n, c]),
             _const("qkv5", [patch, n, 3, heads, hd]), _const("i0", 0), _const("i1", 1), _const("i2", 2),
             _const("bpnc_shape", [1, patch, n, c]), _const("image", [1, c, h, w])]
    return make_model(nodes, [("x", [1, c, h, w])], [("y", [1, c, h, w])], inits)


@pytest.mark.parametrize("build, merged", [
    (mha_unsqueeze, 2), (swin_windows, 4), (swin_mask, 2), (mobilevit_unfold, 2),
    (gathered_mask, 3), (channel_shuffle_pick, 1), (unfold_gathers, 2),
    (mobilevit_block, 4)], ids=lambda v: getattr(v, "__name__", str(v)))
def test_wide_chain_is_merged_and_exact(tmp_path, build, merged):
    _check(build(), tmp_path, merged=merged)


def swin_windows_any_size(win=2, c=3):
    """The window partition and its reverse with H, W known only at run time: the targets come from
    Shape -> Gather -> Div -> Concat, so they are ncnn expressions over the merged axes."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "i1"], ["h"], axis=0),
        helper.make_node("Gather", ["shape", "i2"], ["w"], axis=0),
        helper.make_node("Div", ["h", "win"], ["nh"]),
        helper.make_node("Div", ["w", "win"], ["nw"]),
        helper.make_node("Concat", ["one", "nh", "win", "nw", "win", "c"], ["part6"], axis=0),
        helper.make_node("Reshape", ["x", "part6"], ["p6"]),
        helper.make_node("Transpose", ["p6"], ["p6t"], perm=[0, 1, 3, 2, 4, 5]),
        helper.make_node("Relu", ["p6t"], ["act"]),
        helper.make_node("Concat", ["one", "nh", "nw", "win", "win", "c"], ["back6"], axis=0),
        helper.make_node("Reshape", ["act", "back6"], ["r6"]),
        helper.make_node("Transpose", ["r6"], ["r6t"], perm=[0, 1, 3, 2, 4, 5]),
        helper.make_node("Reshape", ["r6t", "shape"], ["y"]),
    ]
    inits = [_const("i1", [1]), _const("i2", [2]), _const("win", [win]), _const("one", [1]), _const("c", [c])]
    return make_model(nodes, [("x", [1, "H", "W", c])], [("y", None)], inits)


def test_picked_halves_get_their_shape_back(tmp_path):
    converted = _check(channel_shuffle_pick(), tmp_path)
    assert converted.stats["wide_reshapes_added"] == 2


def test_run_time_sizes_stay_expressions(tmp_path):
    converted = assert_one_file_many_sizes(swin_windows_any_size(), tmp_path, [(4, 6), (8, 2)])
    assert converted.stats["merged_wide_tensors"] == 5


def mha_unsqueeze_any_length(c=6):
    """mha_unsqueeze at a run-time length, as khmersm's dynamo export has it: [1,S,3C] -> [S,1,3C] ->
    Reshape [S,1,3,C] (0 copies S) -> Unsqueeze(0) -> Transpose(0,-2) -> Squeeze -> [3,S,1,C]; the
    Squeeze reads S, so the merged [S,1] of the 5-D tensors must still give S back."""
    nodes = [
        helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0, 2]),
        helper.make_node("Reshape", ["xt", "shape4"], ["x4"]),
        helper.make_node("Unsqueeze", ["x4", "ax0"], ["x5"]),
        helper.make_node("Transpose", ["x5"], ["t5"], perm=[3, 1, 2, 0, 4]),
        helper.make_node("Squeeze", ["t5", "ax3"], ["t4"]),
        helper.make_node("Gather", ["t4", "i1"], ["k"], axis=0),
        helper.make_node("Gather", ["t4", "i2"], ["v"], axis=0),
        helper.make_node("Mul", ["k", "v"], ["y"]),
    ]
    inits = [_const("shape4", [0, 0, 3, c]), _const("ax0", [0]), _const("ax3", [3]), _const("i1", 1),
             _const("i2", 2)]
    return make_model(nodes, [("x", [1, "S", 3 * c])], [("y", None)], inits)


def test_run_time_extent_merges_with_known_ones(tmp_path):
    converted = assert_one_file_many_sizes(mha_unsqueeze_any_length(), tmp_path, [(3,), (7,)], dims=("S",))
    assert converted.stats["merged_wide_tensors"] == 2


def test_two_run_time_extents_read_apart_are_not_merged():
    """[2,S,T,3,C] -> [3,S,T,2,C] -> Reshape [0,0,0,-1]: the Reshape reads S and T, so they may not share
    one axis (neither could be read back); the 5-D tensors keep five axes and are refused."""
    nodes = [helper.make_node("Reshape", ["x", "split5"], ["x5"]),
             helper.make_node("Transpose", ["x5"], ["t5"], perm=[3, 1, 2, 0, 4]),
             helper.make_node("Reshape", ["t5", "join"], ["t4"]),
             helper.make_node("Gather", ["t4", "i1"], ["k"], axis=0),
             helper.make_node("Gather", ["t4", "i2"], ["v"], axis=0),
             helper.make_node("Mul", ["k", "v"], ["y"])]
    inits = [_const("split5", [0, 0, 0, 3, 4]), _const("join", [0, 0, 0, -1]), _const("i1", 1), _const("i2", 2)]
    model = make_model(nodes, [("x", [2, "S", "T", 12])], [("y", None)], inits)
    with pytest.raises(ConversionError, match=r"^Transpose node .*'x5' would need 5 ncnn axes \(shape \[2, None, None"):
        convert(model)


def maxvit_grid(g=2, hg=3, wg=2, c=3):
    """MaxViT's grid partition [B,g*Hg,g*Wg,C] -> [B,g,Hg,g,Wg,C] -> perm (0,2,4,1,3,5) -> [B*Hg*Wg,g*g,C]
    moves five axis groups: two Permutes of at most four."""
    nodes = [helper.make_node("Reshape", ["x", "grid6"], ["x6"]),
             helper.make_node("Transpose", ["x6"], ["t6"], perm=[0, 2, 4, 1, 3, 5]),
             helper.make_node("Reshape", ["t6", "cells"], ["y"])]
    inits = [_const("grid6", [1, g, hg, g, wg, c]), _const("cells", [hg * wg, g * g, c])]
    return make_model(nodes, [("x", [1, g * hg, g * wg, c])], [("y", [hg * wg, g * g, c])], inits)


def einops_unfold(c=3, nh=2, p=2, nw=3):
    """'b c (nh ph) (nw pw) -> b ph pw nh nw c' (einops in MobileViT ports): five groups move."""
    nodes = [helper.make_node("Reshape", ["x", "split6"], ["x6"]),
             helper.make_node("Transpose", ["x6"], ["t6"], perm=[0, 3, 5, 2, 4, 1]),
             helper.make_node("Reshape", ["t6", "patches"], ["y"])]
    inits = [_const("split6", [1, c, nh, p, nw, p]), _const("patches", [1, p * p, nh * nw, c])]
    return make_model(nodes, [("x", [1, c, nh * p, nw * p])], [("y", [1, p * p, nh * nw, c])], inits)


@pytest.mark.parametrize("build", [maxvit_grid, einops_unfold], ids=lambda b: b.__name__)
def test_five_group_permutation_takes_two_permutes(tmp_path, build):
    converted = _check(build(), tmp_path)
    assert converted.stats["transposes_split"] == 1
    assert [n.op for n in converted.graph.topological()].count("Permute") == 2


def test_five_axes_kept_apart_by_two_readers_are_refused():
    """One 5-D tensor read by two Transposes that swap different pairs: together they keep all five
    axes apart, and ncnn has no blob for that."""
    nodes = [helper.make_node("Reshape", ["x", "split6"], ["x6"]),
             helper.make_node("Transpose", ["x6"], ["a"], perm=[0, 2, 1, 3, 4, 5]),
             helper.make_node("Transpose", ["x6"], ["b"], perm=[0, 1, 2, 4, 3, 5]),
             helper.make_node("Reshape", ["a", "flat"], ["ya"]),
             helper.make_node("Reshape", ["b", "flat"], ["yb"])]
    model = make_model(nodes, [("x", [1, 6, 40])], [("ya", [1, 240]), ("yb", [1, 240])],
                       [_const("split6", [1, 2, 3, 4, 5, 2]), _const("flat", [1, 240])])
    why = r"^Transpose node .*'x6' would need 5 ncnn axes \(shape \[1, 2, 3, 4, 5, 2\]"
    with pytest.raises(ConversionError, match=why):
        convert(model)


def test_graph_that_fits_is_left_alone():
    """ViT's 5-D qkv with the batch axis dropped already fits: nothing merged, the same layers as without the pass."""
    from passes import PIPELINE, merge_wide_axes as wide_pass
    assert wide_pass in PIPELINE
    converted = convert(vit_qkv())
    assert converted.stats["merged_wide_tensors"] == 0
