"""fuse_layernorm and fuse_rmsnorm: normalizations written out in ONNX ops become one ncnn LayerNorm /
RMSNorm where that computes the same numbers (real ncnn against onnxruntime, the interpreter against
real ncnn), and stay as they were where they would not."""
import numpy as np
import pytest
from onnx import helper

from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model
from onnx_cases import ncnn_layer_types as layers

RNG = np.random.default_rng(17)
SHAPE = (1, 6, 8)
EPS = np.float32(1e-5)


class Builder:
    def __init__(self, opset):
        self.nodes, self.inits, self.count, self.opset = [], [], 0, opset

    def const(self, value):
        name = f"c{len(self.inits)}"
        self.inits.append((name, np.asarray(value)))
        return name

    def op(self, op, *inputs, **attrs):
        self.count += 1
        out = f"t{self.count}"
        self.nodes.append(helper.make_node(op, list(inputs), [out], **attrs))
        return out

    def mean(self, x, axes):
        if self.opset >= 18:
            return self.op("ReduceMean", x, self.const(np.array(axes, np.int64)), keepdims=1)
        return self.op("ReduceMean", x, axes=list(axes), keepdims=1)

    def square(self, x, form):
        return self.op("Pow", x, self.const(np.float32(2.0))) if form == "pow" else self.op("Mul", x, x)

    def divide(self, num, mean, form, eps_after_sqrt=False):
        if eps_after_sqrt:
            std = self.op("Add", self.op("Sqrt", mean), self.const(EPS))
        else:
            std = self.op("Sqrt", self.op("Add", mean, self.const(EPS)))
        if form == "div":
            return self.op("Div", num, std)
        if form.startswith("one_over"):     # HF's torch.rsqrt through TorchScript: x * (1 / std)
            return self.op("Mul", num, self.op("Div", self.const(np.float32(form[8:] or 1.0)), std))
        return self.op("Mul", self.op("Reciprocal", std), num)


def layernorm(square="pow", divide="div", gamma=(8,), beta=(8,), axes=(-1,), opset=13, shape=SHAPE,
              eps_after_sqrt=False, centered_output=False):
    b = Builder(opset)
    centered = b.op("Sub", "x", b.mean("x", axes))
    y = b.divide(centered, b.mean(b.square(centered, square), axes), divide, eps_after_sqrt)
    if gamma is not None:
        y = b.op("Mul", b.const(RNG.uniform(0.5, 1.5, gamma).astype(np.float32)), y)
    if beta is not None:
        y = b.op("Add", y, b.const(RNG.uniform(-1, 1, beta).astype(np.float32)))
    b.nodes[-1].output[0] = "y"
    outputs = [("y", list(shape))] + ([(centered, list(shape))] if centered_output else [])
    return make_model(b.nodes, [("x", list(shape))], outputs, b.inits, opset=opset)


def rmsnorm(square="pow", divide="recip", weight=(8,), axes=(-1,), opset=13, eps_after_sqrt=False, cast=None):
    b = Builder(opset)
    y = b.divide("x", b.mean(b.square("x", square), axes), divide, eps_after_sqrt)
    if cast is not None:        # HF casts the normalized value back to the input's dtype
        y = b.op("Cast", y, to=cast)
        y = y if cast == 1 else b.op("Cast", y, to=1)
    if weight is not None:
        y = b.op("Mul", y, b.const(RNG.uniform(0.5, 1.5, weight).astype(np.float32)))
    b.nodes[-1].output[0] = "y"
    return make_model(b.nodes, [("x", list(SHAPE))], [("y", list(SHAPE))], b.inits, opset=opset)


def check(model, tmp_path, stat, layer, fired):
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats[stat] == int(fired)
    types = layers(converted)
    if fired:
        assert types.count(layer) == 1 and not {"Reduction", "UnaryOp", "BinaryOp"} & set(types), types
    else:
        assert layer not in types, types
    check_interpreter_matches_ncnn(converted, model, tmp_path)


LAYERNORM_FIRES = {
    "torchscript: pow, div": {},
    "d * d, reciprocal": {"square": "mul", "divide": "recip"},
    "no beta": {"beta": None},
    "no affine": {"gamma": None, "beta": None},
    "gamma (1, 1, 8)": {"gamma": (1, 1, 8), "beta": (1, 8)},
    "axes as an input (opset 18)": {"opset": 18},
    "two trailing axes": {"axes": (-2, -1), "gamma": (6, 8), "beta": None},
}


@pytest.mark.parametrize("variant", LAYERNORM_FIRES.values(), ids=LAYERNORM_FIRES.keys())
def test_layernorm_fuses(variant, tmp_path):
    check(layernorm(**variant), tmp_path, "layernorm_fused", "LayerNorm", True)


LAYERNORM_MISSES = {
    "eps added after the square root": {"eps_after_sqrt": True},
    "mean over a non-last axis": {"axes": (1,), "gamma": None, "beta": None},
    "centered input also an output": {"centered_output": True},
}


@pytest.mark.parametrize("variant", LAYERNORM_MISSES.values(), ids=LAYERNORM_MISSES.keys())
def test_layernorm_near_misses_stay_unfused(variant, tmp_path):
    converted = check_in_ncnn(layernorm(**variant), tmp_path)
    assert converted.stats["layernorm_fused"] == 0
    assert "LayerNorm" not in layers(converted)


def test_gamma_along_a_non_normalized_axis_stays_a_multiply(tmp_path):
    model = layernorm(gamma=(6, 1), beta=None)
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["layernorm_fused"] == 1
    types = layers(converted)
    assert types.count("LayerNorm") == 1 and types.count("BinaryOp") == 1, types
    norm = next(n for n in converted.graph.topological() if n.op == "LayerNorm")
    assert np.all(norm.weights[0] == 1) and np.all(norm.weights[1] == 0)    # the gamma is not in it
    check_interpreter_matches_ncnn(converted, model, tmp_path)


RMSNORM_FIRES = {
    "llama: pow, reciprocal, weight": {},
    "x * x, div": {"square": "mul", "divide": "div"},
    "no weight, axes input": {"weight": None, "opset": 18},
    "qwen/llama torchscript: x * (1 / sqrt), cast to float": {"divide": "one_over", "cast": 1},
}


@pytest.mark.parametrize("variant", RMSNORM_FIRES.values(), ids=RMSNORM_FIRES.keys())
def test_rmsnorm_fuses(variant, tmp_path):
    check(rmsnorm(**variant), tmp_path, "rmsnorm_fused", "RMSNorm", True)


RMSNORM_MISSES = {
    "eps added after the square root": {"eps_after_sqrt": True},
    "mean over a non-last axis": {"axes": (1,), "weight": None},
    "x * (2 / sqrt)": {"divide": "one_over2.0"},
}


@pytest.mark.parametrize("variant", RMSNORM_MISSES.values(), ids=RMSNORM_MISSES.keys())
def test_rmsnorm_near_misses_stay_unfused(variant, tmp_path):
    check(rmsnorm(**variant), tmp_path, "rmsnorm_fused", "RMSNorm", False)
