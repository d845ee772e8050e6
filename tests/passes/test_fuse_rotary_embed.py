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


def interleaved(seq="T", first=1, paired=True, swap=False):
    """Cohere's / GLM's rotary: x * cos + flatten(stack(-x[..., 1::2], x[..., 0::2])) * sin, cos and sin
    from repeat_interleave(angles, 2) as torch.export writes it (Unsqueeze, Expand by 2, Reshape);
    `paired=False` writes the angles twice end to end instead (cat: the pairs differ), `first=0` negates
    x[..., 0::2], `swap` stacks (x[..., 0::2], -x[..., 1::2])."""
    inits = [("lo", np.array([0], np.int64)), ("hi", np.array([1], np.int64)), ("end", np.array([2**62], np.int64)),
             ("last", np.array([3], np.int64)), ("two", np.array([2], np.int64)), ("one", np.array([1], np.int64)),
             ("minus1", np.array([-1], np.int64)), ("pair", np.array([1, 1, 1, 2], np.int64)),
             ("flat_cache", np.array([1, -1, D], np.int64)), ("flat_x", np.array([1, H, -1, D], np.int64))]
    nodes = [helper.make_node("Unsqueeze", ["angles", "minus1"], ["a4"]),
             helper.make_node("Expand", ["a4", "pair"], ["a42"]),
             helper.make_node("Reshape", ["a42", "flat_cache"], ["emb"])] if paired else \
        [helper.make_node("Concat", ["angles", "angles"], ["emb"], axis=-1)]
    nodes += [helper.make_node("Cos", ["emb"], ["cos3"]), helper.make_node("Sin", ["emb"], ["sin3"]),
              helper.make_node("Unsqueeze", ["cos3", "one"], ["cos"]),
              helper.make_node("Unsqueeze", ["sin3", "one"], ["sin"]),
              helper.make_node("Slice", ["x", "lo" if first else "hi", "end", "last", "two"], ["x1"]),
              helper.make_node("Slice", ["x", "hi" if first else "lo", "end", "last", "two"], ["x2"]),
              helper.make_node("Neg", ["x2"], ["nx2"]),
              helper.make_node("Unsqueeze", ["nx2", "minus1"], ["nx2u"]),
              helper.make_node("Unsqueeze", ["x1", "minus1"], ["x1u"]),
              helper.make_node("Concat", ["x1u", "nx2u"] if swap else ["nx2u", "x1u"], ["stacked"], axis=-1),
              helper.make_node("Reshape", ["stacked", "flat_x"], ["rot"]),
              helper.make_node("Mul", ["x", "cos"], ["a"]), helper.make_node("Mul", ["rot", "sin"], ["b"]),
              helper.make_node("Add", ["a", "b"], ["y"])]
    return make_model(nodes, [("x", [1, H, seq, D]), ("angles", [1, seq, D // 2])], [("y", [1, H, seq, D])], inits)


@pytest.mark.parametrize("seq", [5, "T"], ids=["static length", "run-time length"])
def test_interleaved_rotary_fuses(seq, tmp_path):
    converted = check_in_ncnn(interleaved(seq=seq), tmp_path, dims={"T": 6}, low=-3.0, high=3.0)
    assert converted.stats["rotary_fused"] == 1
    rope = [n for n in converted.graph.nodes.values() if n.op == "RotaryEmbed"]
    assert len(rope) == 1 and rope[0].params[0] == 1 and "Concat" not in layers(converted)
    check_interpreter_matches_ncnn(converted, interleaved(seq=seq), tmp_path)


INTERLEAVED_MISSES = {"each angle not twice in a row (cat, not repeat_interleave)": {"paired": False},
                      "x[..., 0::2] negated": {"first": 0}, "stacked the other way": {"swap": True}}


@pytest.mark.parametrize("variant", INTERLEAVED_MISSES.values(), ids=INTERLEAVED_MISSES.keys())
def test_interleaved_near_misses_stay_unfused(variant, tmp_path):
    converted = check_in_ncnn(interleaved(seq=5, **variant), tmp_path, low=-3.0, high=3.0)
    assert converted.stats["rotary_fused"] == 0 and "RotaryEmbed" not in layers(converted)
