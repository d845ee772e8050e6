"""One com.microsoft GroupQueryAttention node (and RotaryEmbedding, the RMS norms) built with
onnx.helper, against onnxruntime: packed or separate q/k/v, grouped or not, rotary half-split,
interleaved, partial or none, a prompt (no past: the past input fixed empty) and steps on a past of
run-time length; in the real ncnn runtime and the interpreter. Near misses are refused by name."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import converter
from converter.ir import ConversionError
from converter.ncnn_side.layout import to_ncnn, to_onnx
from converter.ncnn_side.runtime import run_ncnn

F = TensorProto.FLOAT


def _gqa(heads=4, groups=2, dim=16, packed=True, rotary=1, interleaved=0, rot_dim=None, **extra):
    rng = np.random.default_rng(heads * 7 + groups + dim + packed + 3 * interleaved)
    rot_dim = rot_dim or dim
    width = (heads + 2 * groups) * dim
    inputs = [helper.make_tensor_value_info("qkv" if packed else "q", F, [1, "S", width if packed else heads * dim])]
    if not packed:
        inputs += [helper.make_tensor_value_info(n, F, [1, "S", groups * dim]) for n in ("k", "v")]
    inputs += [helper.make_tensor_value_info(n, F, [1, groups, "P", dim]) for n in ("past_k", "past_v")]
    inputs += [helper.make_tensor_value_info("seqlens_k", TensorProto.INT32, [1]),
               helper.make_tensor_value_info("total", TensorProto.INT32, [])]
    angles = np.arange(64)[:, None] * (1.0 / 100 ** (np.arange(rot_dim // 2) / (rot_dim // 2)))[None]
    inits = [helper.make_tensor("cos", F, angles.shape, np.cos(angles).astype(np.float32)),
             helper.make_tensor("sin", F, angles.shape, np.sin(angles).astype(np.float32))]
    qkv = ["qkv", "", ""] if packed else ["q", "k", "v"]
    node = helper.make_node("GroupQueryAttention", qkv + ["past_k", "past_v", "seqlens_k", "total"]
                            + (["cos", "sin"] if rotary else []), ["out", "present_k", "present_v"],
                            domain="com.microsoft", num_heads=heads, kv_num_heads=groups, do_rotary=rotary,
                            rotary_interleaved=interleaved, **extra)
    outputs = [helper.make_tensor_value_info("out", F, [1, "S", heads * dim])] + \
        [helper.make_tensor_value_info(n, F, [1, groups, "T", dim]) for n in ("present_k", "present_v")]
    graph = helper.make_graph([node], "gqa", inputs, outputs, inits if rotary else [])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)])
    return model, rng


def _run_both(model_obj, tmp_path, feeds):
    """The interpreter's and the real runtime's outputs, ONNX layout."""
    ours = model_obj.run(feeds)
    model_obj.save(tmp_path / "m.param", tmp_path / "m.bin")
    io = model_obj.io()
    ins = {e["onnx"]: e for e in io["inputs"]}
    outs = {e["ncnn"]: e for e in io["outputs"]}
    real = run_ncnn(tmp_path / "m.param", tmp_path / "m.bin",
                    {ins[k]["ncnn"]: to_ncnn(v, ins[k]) for k, v in feeds.items() if k in ins}, list(outs),
                    threads=1)
    return ours, {outs[k]["onnx"]: to_onnx(v, outs[k]) for k, v in real.items()}


FORMS = {
    "packed_grouped": {},
    "separate_qkv": {"packed": False},
    "mha_heads": {"groups": 4},
    "interleaved": {"interleaved": 1},
    "partial_rotary": {"dim": 32, "rot_dim": 16},   # onnxruntime: cos width a multiple of 8
    "no_rotary": {"rotary": 0},
    "sliding_window": {"local_window_size": 3},
}


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("past,seq", [(0, 4), (6, 1), (6, 3)])
def test_group_query_attention(form, past, seq, tmp_path):
    proto, rng = _gqa(**FORMS[form])
    path = tmp_path / "gqa.onnx"
    onnx.save(proto, path)
    heads, groups, dim = 4, FORMS[form].get("groups", 2), FORMS[form].get("dim", 16)
    packed = FORMS[form].get("packed", True)
    feeds = ({"qkv": rng.standard_normal((1, seq, (heads + 2 * groups) * dim))} if packed else
             {"q": rng.standard_normal((1, seq, heads * dim)), "k": rng.standard_normal((1, seq, groups * dim)),
              "v": rng.standard_normal((1, seq, groups * dim))})
    feeds.update({n: rng.standard_normal((1, groups, past, dim)) for n in ("past_k", "past_v")})
    feeds = {k: v.astype(np.float32) for k, v in feeds.items()}
    lengths = {"seqlens_k": np.array([past + seq - 1], np.int32), "total": np.array(past + seq, np.int32)}
    ref = dict(zip(["out", "present_k", "present_v"],
                   ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {**feeds, **lengths})))
    shapes = {n: [1, groups, 0, dim] for n in ("past_k", "past_v")} if past == 0 else None
    model = converter.convert(str(path), input_shapes=shapes)
    ops = [n.op for n in model.graph.topological()]
    assert ops.count("SDPA") == 1 and ops.count("RotaryEmbed") == (2 if FORMS[form].get("rotary", 1) else 0)
    if past == 0:
        feeds = {k: v for k, v in feeds.items() if not k.startswith("past")}
    for got in _run_both(model, tmp_path, feeds):
        for name, expected in ref.items():
            np.testing.assert_allclose(got[name], expected, rtol=1e-5, atol=2e-5, err_msg=f"{form} {name}")


@pytest.mark.parametrize("extra,why", [({"softcap": 30.0}, "softcap")])
def test_group_query_attention_near_misses(extra, why, tmp_path):
    proto, _ = _gqa(**extra)
    onnx.save(proto, tmp_path / "gqa.onnx")
    with pytest.raises(ConversionError, match=why):
        converter.convert(str(tmp_path / "gqa.onnx"))


def _norm_model(skip: bool, bias: bool, sum_out: bool, hidden=48):
    rng = np.random.default_rng(hidden + skip + 2 * bias)
    gamma = rng.uniform(0.5, 1.5, hidden).astype(np.float32)
    ins = [helper.make_tensor_value_info("x", F, [1, "S", hidden])]
    inits = [helper.make_tensor("gamma", F, [hidden], gamma)]
    outs = [helper.make_tensor_value_info("y", F, [1, "S", hidden])]
    if skip:
        ins.append(helper.make_tensor_value_info("skip", F, [1, "S", hidden]))
        names = ["x", "skip", "gamma"]
        if bias:
            inits.append(helper.make_tensor("b", F, [hidden], rng.standard_normal(hidden).astype(np.float32)))
            names = ["x", "skip", "gamma", "b"]
        node = helper.make_node("SkipSimplifiedLayerNormalization", names, ["y", "", "", "sum" if sum_out else ""],
                                domain="com.microsoft", epsilon=1e-5)
        if sum_out:
            outs.append(helper.make_tensor_value_info("sum", F, [1, "S", hidden]))
    else:
        node = helper.make_node("SimplifiedLayerNormalization", ["x", "gamma"], ["y"], epsilon=1e-5, axis=-1)
    graph = helper.make_graph([node], "norm", ins, outs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)])


@pytest.mark.parametrize("skip,bias,sum_out", [(False, False, False), (True, False, True), (True, True, True),
                                               (True, False, False)])
def test_rms_norms(skip, bias, sum_out, tmp_path):
    path = tmp_path / "norm.onnx"
    onnx.save(_norm_model(skip, bias, sum_out), path)
    rng = np.random.default_rng(3)
    feeds = {"x": rng.standard_normal((1, 5, 48)).astype(np.float32)}
    if skip:
        feeds["skip"] = rng.standard_normal((1, 5, 48)).astype(np.float32)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    ref = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    model = converter.convert(str(path))
    ops = [n.op for n in model.graph.topological()]
    assert ops.count("RMSNorm") == 1 and ops.count("BinaryOp") == int(skip) + int(bias)
    for got in _run_both(model, tmp_path, feeds):
        for name, expected in ref.items():
            np.testing.assert_allclose(got[name], expected, rtol=1e-5, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("layout", ["rows", "heads"])
@pytest.mark.parametrize("interleaved", [0, 1])
def test_rotary_embedding(layout, interleaved, tmp_path):
    """com.microsoft RotaryEmbedding at run-time position ids: Embed gathers the cache rows."""
    heads, seq, dim = 2, 5, 16
    shape = [1, "S", heads * dim] if layout == "rows" else [1, heads, "S", dim]
    angles = np.arange(32)[:, None] * (1.0 / 100 ** (np.arange(dim // 2) / (dim // 2)))[None]
    inits = [helper.make_tensor("cos", F, angles.shape, np.cos(angles).astype(np.float32)),
             helper.make_tensor("sin", F, angles.shape, np.sin(angles).astype(np.float32))]
    node = helper.make_node("RotaryEmbedding", ["x", "pos", "cos", "sin"], ["y"], domain="com.microsoft",
                            interleaved=interleaved, **({"num_heads": heads} if layout == "rows" else {}))
    graph = helper.make_graph([node], "rope", [helper.make_tensor_value_info("x", F, shape),
                                               helper.make_tensor_value_info("pos", TensorProto.INT64, [1, "S"])],
                              [helper.make_tensor_value_info("y", F, shape)], inits)
    path = tmp_path / "rope.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21),
                                                      helper.make_opsetid("com.microsoft", 1)]), path)
    rng = np.random.default_rng(interleaved)
    x = rng.standard_normal([1, seq, heads * dim] if layout == "rows" else [1, heads, seq, dim]).astype(np.float32)
    feeds = {"x": x, "pos": np.array([[3, 4, 5, 6, 7]], np.int64)}
    ref = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    model = converter.convert(str(path))
    assert [n.op for n in model.graph.topological()].count("RotaryEmbed") == 1
    for got in _run_both(model, tmp_path, feeds):
        np.testing.assert_allclose(got["y"], ref, rtol=1e-5, atol=1e-5)
