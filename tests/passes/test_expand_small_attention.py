"""expand_small_attention's choice at real sizes: a fused attention small enough that ncnn runs the Gemm +
SDPA chain faster becomes that chain, a larger one (or one of run-time length and wide embed) stays one
MultiHeadAttention; both match onnxruntime in the real ncnn and the interpreter. (Every attention
variant in both forms: test_fuse_attention.py.)"""
import numpy as np
import pytest
from onnx import helper

from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model
from onnx_cases import ncnn_layer_types as layers


def self_attention(t, embed, heads, length="fixed"):
    """y = attention(x), x (1, t, embed), as torch exports nn.MultiheadAttention's pieces."""
    rng = np.random.default_rng(embed + t)
    d = embed // heads
    nodes, inits = [], []

    def const(value):
        inits.append((f"c{len(inits)}", np.asarray(value)))
        return inits[-1][0]

    def op(kind, *inputs, **attrs):
        out = f"t{len(nodes)}"
        nodes.append(helper.make_node(kind, list(inputs), [out], **attrs))
        return out

    def linear(x):
        w = rng.uniform(-0.3, 0.3, (embed, embed)).astype(np.float32)
        return op("Add", op("MatMul", x, const(w)), const(rng.uniform(-0.3, 0.3, embed).astype(np.float32)))

    def heads_of(x, perm):
        return op("Transpose", op("Reshape", x, const(np.array([1, -1, heads, d]))), perm=perm)

    q, k, v = (heads_of(linear("x"), perm) for perm in ([0, 2, 1, 3], [0, 2, 3, 1], [0, 2, 1, 3]))
    scores = op("Div", op("MatMul", q, k), const(np.float32(np.sqrt(d))))
    context = op("MatMul", op("Softmax", scores, axis=-1), v)
    merged = op("Reshape", op("Transpose", context, perm=[0, 2, 1, 3]), const(np.array([1, -1, embed])))
    linear(merged)
    nodes[-1].output[0] = "y"
    rows = t if length == "fixed" else "T"
    return make_model(nodes, [("x", [1, rows, embed])], [("y", [1, rows, embed])], inits)


CASES = {   # (T, E, H, length) -> SDPA chain or not
    "deit-like T=17 E=32": ((17, 32, 2, "fixed"), True),
    "narrow embed, long T=197 E=64": ((197, 64, 4, "fixed"), True),
    "T*E at the limit, T=50 E=128": ((50, 128, 4, "fixed"), True),
    "T=64 E=128 stays one layer": ((64, 128, 4, "fixed"), False),
    "run-time T, E=32": ((9, 32, 2, "run-time"), True),
    "run-time T, E=128 stays one layer": ((9, 128, 4, "run-time"), False),
}


@pytest.mark.parametrize("case, sdpa", CASES.values(), ids=CASES.keys())
def test_small_attention_becomes_gemm_and_sdpa(case, sdpa, tmp_path):
    t, embed, heads, length = case
    model = self_attention(t, embed, heads, length)
    converted = check_in_ncnn(model, tmp_path, dims={"T": t})
    assert converted.stats["attention_fused"] == 1
    assert converted.stats["attention_as_sdpa"] == int(sdpa)
    types = layers(converted)
    assert types.count("SDPA") == int(sdpa) and types.count("MultiHeadAttention") == int(not sdpa), types
    assert not {"MatMul", "Softmax", "InnerProduct"} & set(types), types
    check_interpreter_matches_ncnn(converted, model, tmp_path)
