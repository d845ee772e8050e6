"""InnerProduct, Gemm and MatMul against the real ncnn."""
import numpy as np
import pytest

from converter.interpreter import InterpreterError

from .layer_check import Const, check, ids, interpret

ACTIVATIONS = {0: [], 1: [], 2: [0.1], 3: [-0.3, 0.4], 4: [], 5: [], 6: [0.2, 0.5]}


def fc_case(rng, num_input, num_output, bias=True, activation=0):
    params = dict(num_output=num_output, bias_term=int(bias), weight_data_size=num_input * num_output,
                  activation_type=activation)
    if ACTIVATIONS[activation]:
        params["activation_params"] = ACTIVATIONS[activation]
    weights = [(rng.standard_normal(num_input * num_output) / np.sqrt(num_input)).astype(np.float32)]
    if bias:
        weights.append(rng.standard_normal(num_output).astype(np.float32))
    return ids("InnerProduct", **params), weights


@pytest.mark.parametrize("shape,num_input", [((24,), 24), ((16,), 16), ((5, 24), 24), ((16, 24), 24),
                                              ((2, 3, 4), 24), ((16, 2, 3), 96), ((2, 2, 3, 2), 24),
                                              ((4, 6), 24)], ids=str)
def test_innerproduct_shapes(tmp_path, rng, shape, num_input):
    """2-D input whose w is num_input: one output row per input row; anything else is flattened."""
    params, weights = fc_case(rng, num_input, 8)
    out = check(tmp_path, "InnerProduct", params, [rng.standard_normal(shape).astype(np.float32)], weights)
    rows = len(shape) == 2 and shape[1] == num_input
    assert out["out0"].shape == ((shape[0], 8) if rows else (8,))


@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
@pytest.mark.parametrize("bias", [True, False])
def test_innerproduct_activation(tmp_path, rng, activation, bias):
    params, weights = fc_case(rng, 20, 16, bias, activation)
    check(tmp_path, "InnerProduct", params, [2 * rng.standard_normal((20,)).astype(np.float32)], weights)


def test_innerproduct_wrong_size_raises(rng):
    params, weights = fc_case(rng, 24, 8)
    with pytest.raises(InterpreterError, match="takes 24 inputs"):
        interpret("InnerProduct", params, [np.zeros((5, 4), np.float32)], weights)


# ---- Gemm -----------------------------------------------------------------------

M, N, K = 5, 6, 7


@pytest.mark.parametrize("transA", [0, 1])
@pytest.mark.parametrize("transB", [0, 1])
@pytest.mark.parametrize("c_shape", [None, (1,), (M,), (N,), (M, 1), (1, N), (M, N)], ids=str)
def test_gemm_runtime_operands(tmp_path, rng, transA, transB, c_shape):
    a = rng.standard_normal((K, M) if transA else (M, K)).astype(np.float32)
    b = rng.standard_normal((N, K) if transB else (K, N)).astype(np.float32)
    inputs = [a, b] + ([rng.standard_normal(c_shape).astype(np.float32)] if c_shape else [])
    params = ids("Gemm", alpha=0.75, beta=1.5, transA=transA, transB=transB)
    check(tmp_path, "Gemm", params, inputs)


def test_gemm_c_matching_both_m_and_n_is_per_column(tmp_path, rng):
    """A 1-D C of length M == N: ncnn's later rule wins and adds it along each row (per column)."""
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in [(4, 3), (3, 4), (4,)])
    out = check(tmp_path, "Gemm", {}, [a, b, c])["out0"]
    np.testing.assert_allclose(out, a @ b + c[None, :], rtol=1e-5)


@pytest.mark.parametrize("constant", ["A", "B", "AB"])
@pytest.mark.parametrize("transA,transB", [(0, 0), (1, 1), (0, 1)])
@pytest.mark.parametrize("c_type", [-1, 0, 1, 2, 3, 4, None])
def test_gemm_constant_operands(tmp_path, rng, constant, transA, transB, c_type):
    a = rng.standard_normal((K, M) if transA else (M, K)).astype(np.float32)
    b = rng.standard_normal((N, K) if transB else (K, N)).astype(np.float32)
    named = dict(alpha=1.25, beta=0.5, transA=transA, transB=transB, constantM=M, constantN=N, constantK=K,
                 constantA=int("A" in constant), constantB=int("B" in constant))
    inputs, weights = [], []
    for name, value in (("A", a), ("B", b)):
        (weights if name in constant else inputs).append(value)
    if c_type is None and constant == "AB":   # ncnn wants one input blob: a runtime C
        inputs.append(rng.standard_normal((M, N)).astype(np.float32))
    if c_type is not None:          # a constant C of the given broadcast type
        named.update(constantC=1, constant_broadcast_type_C=c_type)
        shape = {-1: None, 0: (1,), 1: (M,), 2: (M, 1), 3: (M, N), 4: (N,)}[c_type]
        if shape:
            weights.append(rng.standard_normal(shape).astype(np.float32))
    check(tmp_path, "Gemm", ids("Gemm", **named), inputs, weights)


@pytest.mark.parametrize("output_transpose", [0, 1])
@pytest.mark.parametrize("output_N1M", [0, 1])
def test_gemm_output_layout(tmp_path, rng, output_transpose, output_N1M):
    a, b = rng.standard_normal((M, K)).astype(np.float32), rng.standard_normal((K, N)).astype(np.float32)
    params = ids("Gemm", output_transpose=output_transpose, output_N1M=output_N1M)
    out = check(tmp_path, "Gemm", params, [a, b])["out0"]
    rows, cols = (N, M) if output_transpose else (M, N)
    assert out.shape == ((rows, 1, cols) if output_N1M else (rows, cols))


def test_gemm_3d_operand_rows_are_channels(tmp_path, rng):
    a = rng.standard_normal((M, 1, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    check(tmp_path, "Gemm", {}, [a, b])


# ---- MatMul ---------------------------------------------------------------------

MATMUL = [
    ((7,), (7,)), ((5, 7), (7, 6)), ((7,), (7, 6)), ((5, 7), (7,)),
    ((7,), (3, 7, 6)), ((7,), (2, 3, 7, 6)), ((3, 5, 7), (7,)), ((2, 3, 5, 7), (7,)),
    ((3, 5, 7), (3, 7, 6)), ((1, 5, 7), (3, 7, 6)), ((3, 5, 7), (1, 7, 6)), ((5, 7), (3, 7, 6)),
    ((3, 5, 7), (7, 6)), ((2, 3, 5, 7), (2, 3, 7, 6)), ((2, 1, 5, 7), (1, 3, 7, 6)),
    ((3, 5, 7), (2, 3, 7, 6)), ((2, 3, 5, 7), (3, 7, 6)), ((5, 7), (2, 3, 7, 6)), ((2, 3, 5, 7), (7, 6)),
    ((16, 5, 7), (16, 7, 6)),
]


def transposed(shape):
    return shape if len(shape) < 2 else shape[:-2] + (shape[-1], shape[-2])


@pytest.mark.parametrize("transB", [0, 1])
@pytest.mark.parametrize("sa,sb", MATMUL, ids=lambda s: "x".join(map(str, s)))
def test_matmul_ranks(tmp_path, rng, sa, sb, transB):
    a = rng.standard_normal(sa).astype(np.float32)
    b = rng.standard_normal(transposed(sb) if transB else sb).astype(np.float32)
    out = check(tmp_path, "MatMul", ids("MatMul", transB=transB), [a, b])["out0"]
    expected = np.matmul(a, b.swapaxes(-1, -2) if transB and b.ndim >= 2 else b)
    assert out.shape == (expected.shape or (1,))


def test_matmul_constant_b(tmp_path, rng):
    a, b = rng.standard_normal((3, 5, 7)).astype(np.float32), rng.standard_normal((7, 6)).astype(np.float32)
    check(tmp_path, "MatMul", {}, [a, Const(b)])


@pytest.mark.parametrize("sa,sb", [((3, 5, 7), (2, 7, 6)), ((5, 6), (7, 4)), ((2, 3, 5, 7), (3, 2, 7, 6))],
                         ids=lambda s: "x".join(map(str, s)))
def test_matmul_mismatch_raises(sa, sb):
    with pytest.raises(InterpreterError, match="MatMul layer 'layer'"):
        interpret("MatMul", {}, [np.zeros(sa, np.float32), np.zeros(sb, np.float32)])


@pytest.mark.parametrize("c_shape", [None, (16,), (16, 8)], ids=str)
def test_gemm_packed_rows(tmp_path, rng, c_shape):
    """M = 16 makes the x86 Gemm write a packed output; the values must not change."""
    a, b = rng.standard_normal((16, 12)).astype(np.float32), rng.standard_normal((12, 8)).astype(np.float32)
    inputs = [a, b] + ([rng.standard_normal(c_shape).astype(np.float32)] if c_shape else [])
    check(tmp_path, "Gemm", ids("Gemm", alpha=0.5, beta=2.0), inputs)
