"""fuse_attention: multi-head attention written out in ONNX ops becomes one ncnn MultiHeadAttention
where that computes the same numbers (real ncnn against onnxruntime, the interpreter against real
ncnn), and stays as it was where it would not."""
import importlib

import numpy as np
import pytest
from onnx import TensorProto, helper

from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model
from onnx_cases import ncnn_layer_types as layers

T, S, C, H = 5, 7, 8, 2
D = C // H
RNG = np.random.default_rng(15)
# the module (the package exports the pass under the module's name)
FORM_CHOICE = importlib.import_module("passes.expand_small_attention")


def rand(*shape, scale=0.5):
    return RNG.uniform(-scale, scale, shape).astype(np.float32)


class Builder:
    """Nodes and initializers of a small attention model, named as they are added."""

    def __init__(self):
        self.nodes, self.inits, self.count = [], [], 0

    def const(self, value):
        name = f"c{len(self.inits)}"
        self.inits.append((name, np.asarray(value)))
        return name

    def op(self, op, *inputs, n_out=1, **attrs):
        self.count += 1
        outs = [f"t{self.count}_{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op, list(inputs), outs, **attrs))
        return outs[0] if n_out == 1 else outs

    def linear(self, x, k, n, bias=True, gemm=False):
        if gemm:        # dynamo's GPT-2: rows flattened, Gemm (transB), shaped back
            rows = self.op("Reshape", x, self.const(np.array([-1, k])))
            y = self.op("Gemm", rows, self.const(rand(n, k)), self.const(rand(n)), transB=1, alpha=0.5)
            return self.op("Reshape", y, self.const(np.array([1, -1, n])))
        y = self.op("MatMul", x, self.const(rand(k, n)))
        return self.op("Add", y, self.const(rand(n))) if bias else y

    def heads(self, x, length, perm=(0, 2, 1, 3)):
        return self.op("Transpose", self.op("Reshape", x, self.const(np.array([1, length, H, D]))), perm=list(perm))

    def merge(self, context):
        return self.op("Reshape", self.op("Transpose", context, perm=[0, 2, 1, 3]), self.const(np.array([1, T, C])))

    def seq_first_heads(self, rows):
        """torch nn.MultiheadAttention's layout: (L, 1, C) -> (L, H, D) -> (H, L, D) -> (1, H, L, D)."""
        split = self.op("Reshape", rows, self.const(np.array([-1, H, D])))
        return self.op("Unsqueeze", self.op("Transpose", split, perm=[1, 0, 2]), self.const(np.array([0])))

    def seq_first_merge(self, context):
        """(1, H, T, D) -> (T, 1, H, D) -> (T, C) -> Gemm -> (T, 1, C) -> (1, T, C)."""
        rows = self.op("Reshape", self.op("Transpose", context, perm=[2, 0, 1, 3]), self.const(np.array([-1, C])))
        y = self.op("Gemm", rows, self.const(rand(C, C)), self.const(rand(C)), transB=1)
        return self.op("Transpose", self.op("Reshape", y, self.const(np.array([-1, 1, C]))), perm=[1, 0, 2])


def attention(*, cross=False, mask=None, scale_at="scores", scale_op="Div", fused_qkv=False,
              three_transposes=False, softmax_axis=-1, mask_op="Add", mask_first=False,
              out_bias=True, extra_output=False, softmax_cast=False, gemm=False, k_factor=None, seq_first=False):
    """y = attention(x [, memory]) in the layout torch exporters write; the keywords pick variants.
    scale_at="qk": the dynamo exporter's scaled_dot_product_attention, sqrt of the scale on q and on the
    transposed k (`k_factor` on k instead, to try others)."""
    b = Builder()
    kv = "m" if cross else "x"
    length, kdim = (S, 6) if cross else (T, C)
    mask_name = "mask"
    if mask == "ids":   # BERT's extended mask: (1 - attention_mask[:, None, None, :]) * -10000 (ids 0/1 by
        # way of bool: random ids of 2 would add +10000 to the scores, where float32 keeps no digits of them)
        kept = b.op("Cast", b.op("Cast", "attention_mask", to=TensorProto.BOOL), to=1)
        ones = b.op("Unsqueeze", kept, b.const(np.array([1, 2])))
        mask_name = b.op("Mul", b.op("Sub", b.const(np.float32(1)), ones), b.const(np.float32(-10000)))
    if mask == "heads":     # torch nn.MultiheadAttention: the padding row expanded to (1, H, 1, S) via (H, 1, S)
        wide = b.op("Expand", "mask", b.const(np.array([1, H, 1, 1])))
        per_head = b.op("Reshape", wide, b.const(np.array([H, 1, -1])))
        mask_name = b.op("Reshape", per_head, b.const(np.array([1, H, 1, -1])))
    if mask == "interleaved":   # (S, 1) -> (S, H) -> (1, H, 1, S): heads read m[0], m[0], m[1]..., not the row
        column = b.op("Expand", b.op("Reshape", "mask", b.const(np.array([-1, 1]))), b.const(np.array([1, H])))
        mask_name = b.op("Reshape", column, b.const(np.array([1, H, 1, -1])))
    if seq_first:       # torch nn.MultiheadAttention (khmersm): sequence-first rows, one fused projection
        qkv = b.linear(b.op("Transpose", "x", perm=[1, 0, 2]), C, 3 * C)
        q, k, v = (b.seq_first_heads(part) for part in b.op("Split", qkv, n_out=3, axis=2))
        k = b.op("Transpose", k, perm=[0, 1, 3, 2])
    elif fused_qkv:       # one projection, cut by Split into q, k, v (timm ViT writes Gather over 5-D)
        qkv = b.op("Transpose", b.op("Reshape", b.linear("x", C, 3 * C, gemm=gemm), b.const(np.array([1, T, 3, H, D]))),
                   perm=[2, 0, 3, 1, 4])
        q, k, v = (b.op("Squeeze", part, b.const(np.array([0])))
                   for part in b.op("Split", qkv, n_out=3, axis=0))
        k = b.op("Transpose", k, perm=[0, 1, 3, 2])
    elif three_transposes:
        q, k, v = (b.heads(b.linear(src, w, C), n) for src, w, n in (("x", C, T), (kv, kdim, length), (kv, kdim, length)))
        k = b.op("Transpose", k, perm=[0, 1, 3, 2])
    else:
        q = b.heads(b.linear("x", C, C), T)
        k = b.heads(b.linear(kv, kdim, C), length, perm=(0, 2, 3, 1))
        v = b.heads(b.linear(kv, kdim, C), length)
    factor = np.float32(np.sqrt(D)) if scale_op == "Div" else np.float32(1 / np.sqrt(D))
    if scale_at == "q":
        q = b.op(scale_op, q, b.const(factor))
    if scale_at == "qk":
        root = np.sqrt(factor).astype(np.float32)
        q = b.op(scale_op, q, b.const(root))
        k = b.op(scale_op, k, b.const(root if k_factor is None else np.asarray(k_factor, np.float32)))
    if scale_at == "v":
        v = b.op(scale_op, v, b.const(factor))
    scores = b.op("MatMul", q, k)
    if mask is not None and mask_first:
        scores = b.op(mask_op, scores, mask_name)
    if scale_at == "scores":
        scores = b.op(scale_op, scores, b.const(factor))
    if mask is not None and not mask_first:
        scores = b.op(mask_op, mask_name, scores) if mask == "first" else b.op(mask_op, scores, mask_name)
    probs = b.op("Softmax", scores, axis=softmax_axis)
    if softmax_cast:    # HF's torchscript export: float -> float Casts after the softmax
        probs = b.op("Cast", b.op("Cast", probs, to=1), to=1)
    context = b.op("MatMul", probs, v)
    y = b.seq_first_merge(context) if seq_first else b.linear(b.merge(context), C, C, bias=out_bias, gemm=gemm)
    b.nodes[-1].output[0] = "y"
    inputs = [("x", [1, T, C])] + ([("m", [1, S, kdim])] if cross else [])
    if mask == "ids":
        inputs.append(("attention_mask", [1, length], TensorProto.INT64))
    elif mask is not None:
        inputs.append(("mask", [1, 1, 1, length] if mask in (True, "first", "heads", "interleaved") else list(mask)))
    outputs = [("y", [1, T, C])] + ([(probs, None)] if extra_output else [])
    return make_model(b.nodes, inputs, outputs, b.inits)


FIRES = {
    "self, scale after the scores": {},
    "self, padding mask": {"mask": True},
    "BERT's mask from attention_mask": {"mask": "ids"},
    "mask written first": {"mask": "first"},
    "per-head full mask": {"mask": (1, H, T, T)},
    "one (T, T) mask": {"mask": (T, T)},
    "scale as Mul on q": {"scale_at": "q", "scale_op": "Mul"},
    "scale as Div on q": {"scale_at": "q"},
    "k transposed after the heads": {"three_transposes": True},
    "cross-attention": {"cross": True, "mask": True},
    "fused qkv projection": {"fused_qkv": True},
    "no output bias": {"out_bias": False},
    "casts after the softmax": {"softmax_cast": True},
    "gemm projections, fused qkv": {"fused_qkv": True, "gemm": True, "mask": (1, 1, T, T)},
    "sqrt of the scale on q and k": {"scale_at": "qk", "scale_op": "Mul"},
    "sqrt of the scale as Div on q and k": {"scale_at": "qk"},
    "other scales on q and k (their product is the scale)": {"scale_at": "qk", "scale_op": "Mul", "k_factor": -1.75},
    "sequence-first rows (nn.MultiheadAttention)": {"seq_first": True, "scale_at": "qk", "scale_op": "Mul"},
}


def assert_one_attention_layer(types, sdpa, extra_permutes=0):
    """One MultiHeadAttention and no Permute; or one SDPA whose Gemms (one per projected input blob,
    one for the output) each have the chain's one Permute (heads out of the rows, or back); plus
    `extra_permutes` of the model's own."""
    if sdpa:
        assert types.count("SDPA") == 1 and "MultiHeadAttention" not in types, types
        assert types.count("Permute") == types.count("Gemm") + extra_permutes, types
    else:
        assert types.count("MultiHeadAttention") == 1, types
        assert types.count("Permute") == extra_permutes, types


@pytest.mark.parametrize("sdpa", [False, True], ids=["one layer", "Gemm and SDPA"])
@pytest.mark.parametrize("variant", FIRES.values(), ids=FIRES.keys())
def test_attention_fuses(variant, sdpa, tmp_path, monkeypatch):
    """Both forms expand_small_attention chooses between, whatever these sizes would pick."""
    monkeypatch.setattr(FORM_CHOICE, "prefers_sdpa", lambda rows, embed: sdpa)
    model = attention(**variant)
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["attention_fused"] == 1
    assert converted.stats["attention_as_sdpa"] == int(sdpa)
    types = layers(converted)
    # sequence-first: (T, 1, C) back to (1, T, C) after the layer stays a Permute
    assert_one_attention_layer(types, sdpa, variant.get("seq_first", 0))
    assert not {"MatMul", "Softmax", "InnerProduct"} & set(types), types
    check_interpreter_matches_ncnn(converted, model, tmp_path)


NEAR_MISSES = {
    "mask added before the scale": {"mask": True, "mask_first": True},
    "scale applied to v": {"scale_at": "v"},
    "softmax over the query axis": {"softmax_axis": 2},
    "mask multiplied": {"mask": True, "mask_op": "Mul"},
    "probabilities also an output": {"extra_output": True},
    "a scale per head on k": {"scale_at": "qk", "scale_op": "Mul", "k_factor": np.full((1, H, 1, 1), 0.7)},
    "a scale per key on k": {"scale_at": "qk", "scale_op": "Mul", "k_factor": np.linspace(0.5, 1.5, T)},
    "a scale per column on k": {"scale_at": "qk", "scale_op": "Mul", "k_factor": np.linspace(0.5, 1.5, D)[:, None]},
}


@pytest.mark.parametrize("variant", NEAR_MISSES.values(), ids=NEAR_MISSES.keys())
def test_attention_near_misses_stay_unfused(variant, tmp_path):
    model = attention(**variant)
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["attention_fused"] == 0
    assert "MultiHeadAttention" not in layers(converted)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_bundled_encoders_fuse_every_attention_block():
    from converter import convert
    from onnx_cases import MODELS
    for name, blocks in (("vit_tiny", 2), ("bert_tiny", 2), ("transformer_small", 1)):
        types = layers(convert(str(MODELS / f"{name}.onnx")))
        assert types.count("MultiHeadAttention") + types.count("SDPA") == blocks, name
        assert "Softmax" not in types and "MatMul" not in types, name
