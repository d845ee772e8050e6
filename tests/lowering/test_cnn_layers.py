"""BatchNormalization, Gemm, Flatten, Concat, Identity, Dropout, in real ncnn against onnxruntime."""
import numpy as np
import pytest
from onnx import helper

from onnx_cases import check_in_ncnn, make_model

RNG = np.random.default_rng(3)


def rand(*shape, low=-1.0, high=1.0):
    return RNG.uniform(low, high, shape).astype(np.float32)


def types(converted):
    return [n.op for n in converted.graph.nodes.values()]


# ---- BatchNormalization -------------------------------------------------------

@pytest.mark.parametrize("x_shape", [(1, 4, 5, 6), (1, 4, 7), (1, 4), (1, 4, 2, 3, 3), (3, 4, 5)],
                         ids=["4d", "3d", "2d", "5d", "no_batch_axis"])
def test_batchnorm(x_shape, tmp_path):
    c = x_shape[1]
    inits = [("s", rand(c, low=0.5, high=1.5)), ("b", rand(c)), ("m", rand(c)),
             ("v", rand(c, low=0.2, high=2.0))]
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], epsilon=1e-3)
    converted = check_in_ncnn(make_model([node], [("x", x_shape)], [("y", None)], inits), tmp_path)
    # one BatchNorm layer when the batch axis drops; else a*x+b on the channel axis
    assert ("BatchNorm" in types(converted)) == (x_shape[0] == 1)


# ---- Gemm ------------------------------------------------------------------------

M, K, N = 3, 5, 4
GEMMS = {
    # name: (A shape, transB, alpha, beta, C shape or None)
    "flattened_transB": ((1, K), 1, 1.0, 1.0, (N,)),
    "flattened_B_KN_no_C": ((1, K), 0, 1.0, 1.0, None),
    "alpha_beta_scalar_C": ((1, K), 0, 0.5, 2.0, ()),
    "C_1xN": ((1, K), 1, 1.0, 0.5, (1, N)),
    "matrix_C_MxN": ((M, K), 0, 1.5, 0.5, (M, N)),
    "matrix_C_Mx1": ((M, K), 1, 1.0, 1.0, (M, 1)),
    "matrix_C_N": ((M, K), 0, 1.0, 1.0, (N,)),
    "beta_zero": ((1, K), 1, 1.0, 0.0, (N,)),
}


@pytest.mark.parametrize("case", GEMMS)
def test_gemm_constant_b_is_inner_product(case, tmp_path):
    a_shape, trans_b, alpha, beta, c_shape = GEMMS[case]
    inits = [("B", rand(*((N, K) if trans_b else (K, N))))]
    if c_shape is not None:
        inits.append(("C", rand(*c_shape)))
    node = helper.make_node("Gemm", ["a", "B"] + (["C"] if c_shape is not None else []), ["y"],
                            transB=trans_b, alpha=alpha, beta=beta)
    converted = check_in_ncnn(make_model([node], [("a", a_shape)], [("y", None)], inits), tmp_path)
    assert {"InnerProduct", "Gemm"} & set(types(converted))      # Gemm for rows of a matrix


@pytest.mark.parametrize("beta", [1.0, 0.5])
def test_gemm_constant_b_runtime_c(beta, tmp_path):
    node = helper.make_node("Gemm", ["a", "B", "c"], ["y"], transB=1, alpha=2.0, beta=beta)
    model = make_model([node], [("a", (M, K)), ("c", (M, N))], [("y", None)], [("B", rand(N, K))])
    assert {"InnerProduct", "Gemm"} & set(types(check_in_ncnn(model, tmp_path)))


@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize("a_shape, c", [((1, K), "const"), ((M, K), "input"), ((M, K), None)],
                         ids=["flattened_const_C", "matrix_input_C", "matrix_no_C"])
def test_gemm_runtime_b(a_shape, c, trans_b, tmp_path):
    b_shape = (N, K) if trans_b else (K, N)
    m = a_shape[0]
    inputs, inits, names = [("a", a_shape), ("b", b_shape)], [], ["a", "b"]
    if c == "const":
        inits, names = [("C", rand(N))], names + ["C"]
    elif c == "input":
        inputs, names = inputs + [("c", (m, N))], names + ["c"]
    node = helper.make_node("Gemm", names, ["y"], transB=trans_b, alpha=0.7, beta=1.3)
    converted = check_in_ncnn(make_model([node], inputs, [("y", None)], inits), tmp_path)
    assert "MatMul" in types(converted)


# ---- Flatten, Concat --------------------------------------------------------------

@pytest.mark.parametrize("x_shape, axis, layer", [((1, 3, 4, 5), 1, "Flatten"), ((1, 3, 4, 5), 0, "Flatten"),
                                                  ((1, 3, 4, 5), 2, "Reshape"), ((1, 3, 4, 5), -1, "Reshape"),
                                                  ((1, 6, 7), 1, "Flatten"), ((2, 3, 4), 1, "Reshape")])
def test_flatten(x_shape, axis, layer, tmp_path):
    node = helper.make_node("Flatten", ["x"], ["y"], axis=axis)
    converted = check_in_ncnn(make_model([node], [("x", x_shape)], [("y", None)]), tmp_path)
    assert layer in types(converted)


@pytest.mark.parametrize("axis", [1, 2, 3, -1, -3])
def test_concat_4d(axis, tmp_path):
    shapes = [[1, 2, 3, 4], [1, 2, 3, 4], [1, 2, 3, 4]]
    for s in shapes[1:]:
        s[axis] += 1
    node = helper.make_node("Concat", ["x0", "x1", "x2"], ["y"], axis=axis)
    inputs = [(f"x{i}", s) for i, s in enumerate(shapes)]
    check_in_ncnn(make_model([node], inputs, [("y", None)]), tmp_path)


@pytest.mark.parametrize("x_shape, axis", [((1, 3, 4), 1), ((1, 3, 4), 2), ((1, 5), 1)])
def test_concat_with_constant_operand(x_shape, axis, tmp_path):
    const_shape = list(x_shape)
    const_shape[axis] = 2
    node = helper.make_node("Concat", ["x", "k"], ["y"], axis=axis)
    model = make_model([node], [("x", x_shape)], [("y", None)], [("k", rand(*const_shape))])
    assert "MemoryData" in types(check_in_ncnn(model, tmp_path))


# ---- Identity, Dropout ---------------------------------------------------------------

def test_identity_inside_graph_is_rewired_away(tmp_path):
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Identity", ["r"], ["i"]),
             helper.make_node("Dropout", ["i"], ["d"]), helper.make_node("Sigmoid", ["d"], ["y"])]
    converted = check_in_ncnn(make_model(nodes, [("x", (1, 3, 4))], [("y", None)]), tmp_path)
    assert types(converted).count("Noop") == 0 and len(converted.graph.nodes) == 3


@pytest.mark.parametrize("op", ["Identity", "Dropout"])
def test_identity_as_graph_output_keeps_its_name(op, tmp_path):
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node(op, ["r"], ["y"])]
    converted = check_in_ncnn(make_model(nodes, [("x", (1, 3, 4))], [("y", None)]), tmp_path)
    # (eliminate_noop: the Relu writes the output's name itself)
    assert converted.graph.outputs == ["y"] and types(converted) == ["Input", "ReLU"]
    assert converted.graph.producer("y").op == "ReLU"


def test_dropout_with_ratio_and_unused_mask(tmp_path):
    nodes = [helper.make_node("Dropout", ["x", "ratio"], ["d", "mask"]),
             helper.make_node("Relu", ["d"], ["y"])]
    model = make_model(nodes, [("x", (1, 3, 4))], [("y", None)], [("ratio", np.float32(0.3))])
    check_in_ncnn(model, tmp_path)
