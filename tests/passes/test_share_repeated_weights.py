"""convert --share-weights on a model that reuses one attention block (chython-rxnmap's form):
without it every MultiHeadAttention and Gemm holds a copy; with it each weight is one MemoryData
read by Gemms, and the numbers stay onnxruntime's in real ncnn and the interpreter."""
import numpy as np
from onnx import helper

from converter.ncnn_side.bin_size import size_line, size_record, written_bin_bytes
from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model, ncnn_layer_types

T, C, H = 6, 32, 2
D = C // H


def reused_block(times=2):
    rng = np.random.default_rng(28)
    inits = [(n, rng.uniform(-0.3, 0.3, (C, C)).astype(np.float32)) for n in ("wq", "wk", "wv", "wo")]
    inits += [("w1", rng.uniform(-0.3, 0.3, (C, 2 * C)).astype(np.float32)), ("b1", rng.uniform(-1, 1, 2 * C).astype(np.float32)),
              ("heads", np.array([1, T, H, D])), ("rows", np.array([1, T, C])), ("scale", np.float32(np.sqrt(D)))]
    nodes = []

    def op(kind, inputs, out, **attrs):
        nodes.append(helper.make_node(kind, inputs, [out], **attrs))
        return out

    def block(x, k):
        q, key, v = (op("Reshape", [op("MatMul", [x, w], f"{w}{k}"), "heads"], f"{w}h{k}") for w in ("wq", "wk", "wv"))
        q = op("Transpose", [q], f"qt{k}", perm=[0, 2, 1, 3])
        key = op("Transpose", [key], f"kt{k}", perm=[0, 2, 3, 1])
        v = op("Transpose", [v], f"vt{k}", perm=[0, 2, 1, 3])
        scores = op("Div", [op("MatMul", [q, key], f"s{k}"), "scale"], f"ss{k}")
        context = op("MatMul", [op("Softmax", [scores], f"p{k}", axis=-1), v], f"c{k}")
        merged = op("Reshape", [op("Transpose", [context], f"ct{k}", perm=[0, 2, 1, 3]), "rows"], f"m{k}")
        attended = op("Add", [x, op("MatMul", [merged, "wo"], f"o{k}")], f"a{k}")
        return op("Relu", [op("Add", [op("MatMul", [attended, "w1"], f"f{k}"), "b1"], f"fb{k}")], f"r{k}")

    y = "x"
    for k in range(times):
        y = block(y, k)
        y = op("Slice", [y, "starts", "ends", "axes"], f"y{k}") if k < times - 1 else y
    inits += [("starts", np.array([0])), ("ends", np.array([C])), ("axes", np.array([2]))]
    return make_model(nodes, [("x", [1, T, C])], [(y, [1, T, 2 * C])], inits)


def test_a_reused_block_writes_each_weight_once(tmp_path):
    model = reused_block()
    weights = sum(int(np.prod(t.dims)) for t in model.graph.initializer) * 4
    copies = check_in_ncnn(model, tmp_path / "copies")
    assert copies.stats["attention_fused"] == 2      # (expand_small_attention may write a short one as Gemms)
    assert written_bin_bytes(copies.graph) > 1.9 * weights
    shared = check_in_ncnn(model, tmp_path / "shared", share_weights=True)
    types = ncnn_layer_types(shared)
    assert "MultiHeadAttention" not in types and types.count("MemoryData") >= 5       # wq wk wv wo w1
    assert shared.stats["attention_kept_for_shared_weights"] == 2 and shared.stats["gemm_weights_shared"] == 10
    assert written_bin_bytes(shared.graph) <= 1.1 * weights
    check_interpreter_matches_ncnn(shared, model, tmp_path)
    # the convert line states the trade; without the option the warning offers it
    record, _ = size_record(shared.graph, written_bin_bytes(shared.graph), weights, 0,
                            (shared.stats["gemm_weights_shared"], shared.stats["gemm_weight_bytes_shared"]))
    assert "--share-weights: 10 Gemms read shared weights" in size_line(record) and "slower" in size_line(record)
    _, warnings = size_record(copies.graph, written_bin_bytes(copies.graph), weights)
    assert "--share-weights writes a Gemm/attention weight once" in warnings[0]
