"""fuse_conv_batchnorm and fuse_swish: they fire where they may (layer counts), and numbers stay right."""
import numpy as np
import pytest
from onnx import helper

from converter.onnx_side.loader import load_onnx
from onnx_cases import check_in_ncnn, make_model
from passes.fuse_conv_batchnorm import fuse_conv_batchnorm
from passes.fuse_swish import fuse_swish

RNG = np.random.default_rng(11)


def rand(*shape, low=-1.0, high=1.0):
    return RNG.uniform(low, high, shape).astype(np.float32)


def types(converted):
    return [n.op for n in converted.graph.nodes.values()]


def bn(x, y, c, prefix="bn"):
    inits = [(f"{prefix}_s", rand(c, low=0.5, high=1.5)), (f"{prefix}_b", rand(c)),
             (f"{prefix}_m", rand(c)), (f"{prefix}_v", rand(c, low=0.2, high=2.0))]
    node = helper.make_node("BatchNormalization", [x] + [n for n, _ in inits], [y], epsilon=1e-4)
    return node, inits


# ---- Conv/Gemm + BatchNormalization -----------------------------------------------

@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("group", [1, 2])
def test_conv_bn_folds(bias, group, tmp_path):
    inits = [("W", rand(4, 4 // group, 3, 3))] + ([("B", rand(4))] if bias else [])
    conv = helper.make_node("Conv", ["x", "W"] + (["B"] if bias else []), ["c"], pads=[1, 1, 1, 1],
                            group=group)
    norm, bn_inits = bn("c", "y", 4)
    model = make_model([conv, norm], [("x", (1, 4, 6, 6))], [("y", None)], inits + bn_inits)
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["conv_bn_fused"] == 1
    assert "BatchNorm" not in types(converted) and len(converted.graph.nodes) == 2   # Input + conv


@pytest.mark.parametrize("trans_b, c_shape", [(1, (3,)), (0, None), (0, (2, 1)), (1, ())])
def test_gemm_bn_folds(trans_b, c_shape, tmp_path):
    inits = [("B", rand(*((3, 5) if trans_b else (5, 3))))]
    if c_shape is not None:
        inits.append(("C", rand(*c_shape)))
    gemm = helper.make_node("Gemm", ["a", "B"] + (["C"] if c_shape is not None else []), ["g"],
                            transB=trans_b, alpha=0.5, beta=2.0)
    norm, bn_inits = bn("g", "y", 3)
    model = make_model([gemm, norm], [("a", (2, 5))], [("y", None)], inits + bn_inits)
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["conv_bn_fused"] == 1
    assert "BatchNorm" not in types(converted) and sum(t in ("InnerProduct", "Gemm") for t in types(converted)) == 1


def test_conv_read_twice_is_not_folded(tmp_path):
    conv = helper.make_node("Conv", ["x", "W"], ["c"])
    norm, bn_inits = bn("c", "n", 2)
    add = helper.make_node("Add", ["n", "c"], ["y"])
    model = make_model([conv, norm, add], [("x", (1, 3, 5, 5))], [("y", None)],
                       [("W", rand(2, 3, 1, 1))] + bn_inits)
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["conv_bn_fused"] == 0 and "BatchNorm" in types(converted)


def test_conv_bn_chain_folds_each_pair_once():
    nodes, inits, x = [], [], "x"
    for i in range(3):
        nodes.append(helper.make_node("Conv", [x, f"W{i}"], [f"c{i}"]))
        inits.append((f"W{i}", rand(3, 3, 1, 1)))
        norm, bn_inits = bn(f"c{i}", f"n{i}", 3, prefix=f"bn{i}")
        nodes.append(norm)
        inits += bn_inits
        x = f"n{i}"
    graph = load_onnx(make_model(nodes, [("x", (1, 3, 4, 4))], [("n2", None)], inits))
    assert fuse_conv_batchnorm(graph) == {"conv_bn_fused": 3}
    assert sorted(n.op for n in graph.nodes.values()) == ["Conv"] * 3
    assert fuse_conv_batchnorm(graph) == {"conv_bn_fused": 0}


# ---- Swish -------------------------------------------------------------------------

@pytest.mark.parametrize("order", [["x", "s"], ["s", "x"]], ids=["x_times_sigmoid", "sigmoid_times_x"])
def test_swish_fuses(order, tmp_path):
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Mul", order, ["y"])]
    model = make_model(nodes, [("x", (1, 3, 4, 5))], [("y", None)])
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["swish_fused"] == 1
    assert types(converted).count("Swish") == 1 and "Sigmoid" not in types(converted)
    assert "BinaryOp" not in types(converted)


@pytest.mark.parametrize("case", ["sigmoid_read_twice", "other_operand"])
def test_swish_not_fused(case, tmp_path):
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"])]
    inputs = [("x", (1, 3, 4))]
    if case == "sigmoid_read_twice":
        nodes += [helper.make_node("Mul", ["x", "s"], ["m"]), helper.make_node("Add", ["m", "s"], ["y"])]
    else:
        inputs.append(("z", (1, 3, 4)))
        nodes.append(helper.make_node("Mul", ["z", "s"], ["y"]))
    converted = check_in_ncnn(make_model(nodes, inputs, [("y", None)]), tmp_path)
    assert converted.stats["swish_fused"] == 0 and "Swish" not in types(converted)


def test_swish_not_fused_when_sigmoid_is_a_graph_output():
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Mul", ["x", "s"], ["y"])]
    graph = load_onnx(make_model(nodes, [("x", (1, 3, 4))], [("y", None), ("s", None)]))
    assert fuse_swish(graph) == {"swish_fused": 0}


def test_swish_pass_is_one_walk_over_many():
    nodes, x = [], "x"
    for i in range(5):
        nodes += [helper.make_node("Sigmoid", [x], [f"s{i}"]),
                  helper.make_node("Mul", [f"s{i}", x], [f"m{i}"])]
        x = f"m{i}"
    graph = load_onnx(make_model(nodes, [("x", (1, 2, 3))], [(x, None)]))
    assert fuse_swish(graph) == {"swish_fused": 5}
    assert [n.op for n in graph.topological()] == ["Swish"] * 5
