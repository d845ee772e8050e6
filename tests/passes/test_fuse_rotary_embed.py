"""fuse_rotary_embed: HF's rotate_half rotary becomes one ncnn RotaryEmbed where cos and sin are
proven to repeat their halves (real ncnn and the interpreter against onnxruntime), and stays
written out where it would compute other numbers."""
import numpy as np
import pytest
from onnx import helper

from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model
from onnx_cases import ncnn_layer_types as layers

H, D = 3, 8


def rotary(seq="T", second=None, swap=False, split=D // 2, cos_const=None):
    """x (1, H, T, D) rotated by cos/sin of `angles` (1, T, D/2) written twice (HF's
    cat(freqs, freqs)); `second` replaces the second copy, `swap` writes Concat(x1, -x2), `split`
    moves the half point, `cos_const` is a constant cos (1, 1, T, D) instead."""
    inits = [("h0", np.array([0], np.int64)), ("h1", np.array([split], np.int64)),
             ("end", np.array([D], np.int64)), ("last", np.array([3], np.int64)), ("one", np.array([1], np.int64))]
    nodes = [helper.make_node("Concat", ["angles", second or "angles"], ["emb"], axis=-1),
             helper.make_node("Cos", ["emb"], ["cos3"]), helper.make_node("Sin", ["emb"], ["sin3"]),
             helper.make_node("Unsqueeze", ["cos3", "one"], ["cos"]),
             helper.make_node("Unsqueeze", ["sin3", "one"], ["sin"]),
             helper.make_node("Slice", ["x", "h0", "h1", "last"], ["x1"]),
             helper.make_node("Slice", ["x", "h1", "end", "last"], ["x2"]),
             helper.make_node("Neg", ["x2"], ["nx2"]),
             helper.make_node("Concat", ["x1", "nx2"] if swap else ["nx2", "x1"], ["rot"], axis=-1),
             helper.make_node("Mul", ["x", "cosc" if cos_const is not None else "cos"], ["a"]),
             helper.make_node("Mul", ["rot", "sin"], ["b"]),
             helper.make_node("Add", ["a", "b"], ["y"])]
    if cos_const is not None:
        inits.append(("cosc", cos_const.astype(np.float32)))
    inputs = [("x", [1, H, seq, D]), ("angles", [1, seq, D // 2])] + ([(second, [1, seq, D // 2])] if second else [])
    return make_model(nodes, inputs, [("y", [1, H, seq, D])], inits)


def check(model, tmp_path, fired, dims=None):
    converted = check_in_ncnn(model, tmp_path, dims=dims, low=-3.0, high=3.0)
    assert converted.stats["rotary_fused"] == int(fired)
    types = layers(converted)
    if fired:
        # the rotation's Slices, Neg, Concat, Muls and Add are gone (the cache's own Concat stays)
        assert types.count("RotaryEmbed") == 1 and "BinaryOp" not in types and types.count("Concat") <= 1, types
    else:
        assert "RotaryEmbed" not in types, types
    check_interpreter_matches_ncnn(converted, model, tmp_path)


@pytest.mark.parametrize("seq", [5, "T"], ids=["static length", "run-time length"])
def test_rotary_fuses(seq, tmp_path):
    check(rotary(seq=seq), tmp_path, True, dims={"T": 6})


def test_constant_cache_with_equal_halves_fuses(tmp_path):
    angles = np.random.default_rng(0).uniform(-3, 3, (1, 1, 5, D // 2))
    check(rotary(seq=5, cos_const=np.cos(np.concatenate([angles, angles], -1))), tmp_path, True)


MISSES = {
    "halves of the cache differ": {"second": "other"},
    "rotation the other way (Concat(x1, -x2))": {"swap": True},
    "split off the middle": {"split": D // 2 - 1},
}


@pytest.mark.parametrize("variant", MISSES.values(), ids=MISSES.keys())
def test_rotary_near_misses_stay_unfused(variant, tmp_path):
    check(rotary(seq=5, **variant), tmp_path, False)


def test_constant_cache_with_unequal_halves_stays_unfused(tmp_path):
    check(rotary(seq=5, cos_const=np.random.default_rng(1).uniform(-1, 1, (1, 1, 5, D))), tmp_path, False)
