"""fuse_groupnorm: nn.GroupNorm as torch's TorchScript exporter writes it (Reshape -> InstanceNormalization
-> Reshape [-> Mul -> Add]) becomes one ncnn GroupNorm that matches onnxruntime in the real ncnn and the
interpreter; near misses stay as they were (and still match)."""
import numpy as np
import pytest
from onnx import helper

from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model
from onnx_cases import ncnn_layer_types as layers

RNG = np.random.default_rng(7)


def group_norm(shape=(1, 8, 5, 6), groups=2, target=None, gamma=(8, 1, 1), beta=(8, 1, 1),
               extra_output=False, add_first=False):
    """y = GroupNorm(x) in TorchScript's pieces; the keywords pick variants (None leaves a step out)."""
    target = target or [shape[0], groups, -1]
    inits = [("target", np.array(target, np.int64)),
             ("back", np.array(shape, np.int64)),
             ("scale", RNG.uniform(0.5, 1.5, target[1]).astype(np.float32)),
             ("bias", RNG.uniform(-0.5, 0.5, target[1]).astype(np.float32))]
    nodes = [helper.make_node("Reshape", ["x", "target"], ["r"]),
             helper.make_node("InstanceNormalization", ["r", "scale", "bias"], ["n"], epsilon=1e-5),
             helper.make_node("Reshape", ["n", "back"], ["y0"])]
    steps = [("Mul", gamma), ("Add", beta)]
    for op, const_shape in steps[::-1] if add_first else steps:
        if const_shape is not None:
            inits.append((op, RNG.uniform(-1.5, 1.5, const_shape).astype(np.float32)))
            nodes.append(helper.make_node(op, [nodes[-1].output[0], op], [f"{op}_out"]))
    nodes[-1].output[0] = "y"
    outputs = [("y", list(shape))] + ([("r", None)] if extra_output else [])
    return make_model(nodes, [("x", list(shape))], outputs, inits)


FIRES = {
    "gamma and beta per channel": ({}, 0),
    "no affine": ({"gamma": None, "beta": None}, 0),
    "one value for every channel": ({"gamma": (1,), "beta": (1, 1, 1, 1)}, 0),
    "one group per channel": ({"groups": 8}, 0),
    "1-D input (C, L)": ({"shape": (1, 8, 10), "gamma": (8, 1), "beta": (8, 1)}, 0),
    "beta over H stays a BinaryOp": ({"beta": (1, 5, 1)}, 1),
    "beta before gamma: gamma stays": ({"add_first": True}, 1),
}


@pytest.mark.parametrize("variant, binary_ops", FIRES.values(), ids=FIRES.keys())
def test_groupnorm_fuses(variant, binary_ops, tmp_path):
    model = group_norm(**variant)
    converted = check_in_ncnn(model, tmp_path, rtol=1e-4, atol=1e-4)
    assert converted.stats["groupnorm_fused"] == 1
    types = layers(converted)
    assert types.count("GroupNorm") == 1 and "Reshape" not in types and "InstanceNorm" not in types, types
    assert types.count("BinaryOp") == binary_ops, types
    check_interpreter_matches_ncnn(converted, model, tmp_path)


NEAR_MISSES = {
    "rows that cut across channels": {"target": [1, 40, 6]},
    "grouped tensor also an output": {"extra_output": True},
}


@pytest.mark.parametrize("variant", NEAR_MISSES.values(), ids=NEAR_MISSES.keys())
def test_groupnorm_near_misses_stay(variant, tmp_path):
    model = group_norm(**variant)
    converted = check_in_ncnn(model, tmp_path, rtol=1e-4, atol=1e-4)
    assert converted.stats["groupnorm_fused"] == 0
    check_interpreter_matches_ncnn(converted, model, tmp_path)
