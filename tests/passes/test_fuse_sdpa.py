"""fuse_sdpa: attention over leading axes that fuse_attention leaves (no projections it could take,
a batch of patch positions as in hf_mobilevit) becomes one ncnn SDPA over the merged leading axes,
checked against onnxruntime in the real ncnn and the interpreter; near misses stay as they were."""
import numpy as np
import pytest
from onnx import helper

from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model
from onnx_cases import ncnn_layer_types as layers

P, T, S, H, D = 3, 5, 6, 2, 4


def attention(lead=(P, H), k_perm=(0, 2, 3, 1), scale_op="Div", mask=False, softmax_axis=-1,
              extra_output=False):
    """y = Softmax(q k^T / sqrt(D)) v with q (lead..., T, D), k^T written by one Transpose from k' laid
    out (P, S, H, D) (k_perm picks how), v (lead..., S, D)."""
    n = len(lead)
    k_src = [P, S, H, D] if n == 2 else [1, S, D]
    inits = [("scale", np.float32(np.sqrt(D) if scale_op == "Div" else 1 / np.sqrt(D)))]
    if scale_op == "split":     # timm: q and k^T scaled by D ** -0.25 each
        inits = [("scale", np.float32(D ** -0.25))]
        nodes = [helper.make_node("Transpose", ["k"], ["kt0"], perm=list(k_perm)),
                 helper.make_node("Mul", ["kt0", "scale"], ["kt"]), helper.make_node("Mul", ["q", "scale"], ["qs"]),
                 helper.make_node("MatMul", ["qs", "kt"], ["scores"])]
    else:
        nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=list(k_perm)),
                 helper.make_node("MatMul", ["q", "kt"], ["qk"]),
                 helper.make_node(scale_op, ["qk", "scale"], ["scores"])]
    if mask:
        nodes.append(helper.make_node("Add", ["scores", "mask"], ["masked"]))
        inits.append(("mask", np.random.default_rng(1).uniform(-1, 0, (T, S)).astype(np.float32)))
    nodes += [helper.make_node("Softmax", [nodes[-1].output[0]], ["p"], axis=softmax_axis),
              helper.make_node("MatMul", ["p", "v"], ["y"])]
    inputs = [("q", [*lead, T, D]), ("k", k_src), ("v", [*lead, S, D])]
    outputs = [("y", [*lead, T, D])] + ([("p", None)] if extra_output else [])
    return make_model(nodes, inputs, outputs, inits)


FIRES = {
    "patches and heads (P, H, T, D)": {},
    "scale as Mul": {"scale_op": "Mul"},
    "scale split between q and k^T": {"scale_op": "split"},
    "one leading axis": {"lead": (1,), "k_perm": (0, 2, 1)},
}


@pytest.mark.parametrize("variant", FIRES.values(), ids=FIRES.keys())
def test_attention_over_leading_axes_becomes_sdpa(variant, tmp_path):
    model = attention(**variant)
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["sdpa_fused"] == 1
    types = layers(converted)
    assert types.count("SDPA") == 1 and not {"MatMul", "Softmax"} & set(types), types
    check_interpreter_matches_ncnn(converted, model, tmp_path)


NEAR_MISSES = {
    "a mask added": {"mask": True},
    "softmax over the query axis": {"softmax_axis": 2},
    "probabilities also an output": {"extra_output": True},
}


@pytest.mark.parametrize("variant", NEAR_MISSES.values(), ids=NEAR_MISSES.keys())
def test_sdpa_near_misses_stay(variant, tmp_path):
    model = attention(**variant)
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["sdpa_fused"] == 0 and "SDPA" not in layers(converted)
    check_interpreter_matches_ncnn(converted, model, tmp_path)
