"""Element-wise layers and UnaryOp against the real ncnn."""
import numpy as np
import pytest

from converter.ncnn_side.layers import SPECS

from .layer_check import check, ids

SHAPES = [(37,), (5, 7), (16, 3, 5), (3, 2, 4, 5)]


def values(rng, shape, low=-4.0, high=4.0):
    return rng.uniform(low, high, shape).astype(np.float32)


LAYERS = [
    ("ReLU", {}), ("ReLU", {"slope": 0.1}), ("Clip", {"min": -0.5, "max": 1.25}), ("Clip", {}),
    ("Clip", {"min": 1.0, "max": -1.0}),       # crossed bounds: ncnn applies min, then max
    ("Sigmoid", {}), ("Swish", {}), ("TanH", {}), ("HardSigmoid", {}),
    ("HardSigmoid", {"alpha": 1 / 6, "beta": 0.5}), ("HardSwish", {}),
    ("HardSwish", {"alpha": 1 / 6, "beta": 0.5}), ("GELU", {}), ("GELU", {"fast_gelu": 1}), ("Erf", {}),
    ("Dropout", {}), ("Dropout", {"scale": 0.75}),
] + [(op, named) for op, named in [("ELU", {}), ("ELU", {"alpha": 1.0}), ("SELU", {})] if op in SPECS]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("op,named", LAYERS, ids=lambda v: v if isinstance(v, str) else ",".join(map(str, v.values())))
def test_activation(tmp_path, rng, op, named, shape):
    check(tmp_path, op, ids(op, **named), [values(rng, shape)], rtol=1e-5)


def test_sigmoid_saturates_like_ncnn(tmp_path):
    x = np.array([-200, -90, -88, 0, 88, 90, 200], np.float32)
    check(tmp_path, "Sigmoid", {}, [x], rtol=1e-5)


# op_type -> input range inside the function's domain
UNARY_DOMAINS = {
    0: (-4, 4), 1: (-4, 4), 2: (-4, 4), 3: (-4, 4), 4: (-4, 4), 5: (0.1, 9), 6: (0.1, 9), 7: (-4, 4),
    8: (0.1, 9), 9: (-4, 4), 10: (-4, 4), 11: (-1.2, 1.2), 12: (-0.95, 0.95), 13: (-0.95, 0.95),
    14: (-4, 4), 15: (0.2, 4), 16: (-4, 4), 17: (0.1, 9), 18: (-4, 4), 19: (-4, 4), 20: (-4, 4),
    21: (-2, 2), 22: (-3, 3), 23: (-4, 4), 24: (-3, 3), 25: (1.1, 9), 26: (-0.9, 0.9), 27: (-0.5, 4),
}


@pytest.mark.parametrize("shape", [(37,), (16, 3, 5)], ids=str)
@pytest.mark.parametrize("op_type", sorted(UNARY_DOMAINS))
def test_unaryop(tmp_path, rng, op_type, shape):
    x = values(rng, shape, *UNARY_DOMAINS[op_type])
    if op_type == 18:              # keep round() away from .5 ties
        x = np.round(x) + rng.uniform(-0.4, 0.4, shape).astype(np.float32)
    check(tmp_path, "UnaryOp", {0: op_type}, [x], rtol=1e-5)
