"""Sign, Sinh, Cosh, Asinh, Acosh, Atanh in real ncnn and the interpreter against onnxruntime, over
wide ranges: near 0, near the float range's end (where sinh/cosh overflow), the domain edges."""
import numpy as np
import pytest
from onnx import helper

from converter import convert
from converter.ncnn_side.runtime import run_ncnn
from onnx_cases import make_model, onnxruntime_outputs


def spread(*parts) -> np.ndarray:
    return np.concatenate([np.asarray(p, np.float64).ravel() for p in parts]).astype(np.float32)


TINY = np.geomspace(1e-38, 1e-2, 300)
INPUTS = {
    "Sign": spread(np.linspace(-3, 3, 301), TINY, -TINY, [0.0, -0.0, np.inf, -np.inf]),
    # sinh/cosh overflow to inf between 89.41 and 89.42, where the UnaryOps saturate at 1.2e38
    "Sinh": spread(np.linspace(-89.4, 89.4, 601), TINY, -TINY, np.linspace(88, 89.5, 151),
                   -np.linspace(88, 89.5, 151), [0.0, -0.0, 120, -120, 200, -200, np.inf, -np.inf]),
    "Cosh": spread(np.linspace(-89.4, 89.4, 601), TINY, -TINY, np.linspace(88, 89.5, 151),
                   -np.linspace(88, 89.5, 151), [0.0, -0.0, 120, -120, 200, -200, np.inf, -np.inf]),
    # asinh: |x| < 1e-7 where ncnn's own UnaryOp gives 0; up to 1.7e38 (see hyperbolic.py)
    "Asinh": spread(np.geomspace(1e-38, 1.7e38, 600), -np.geomspace(1e-38, 1.7e38, 600),
                    np.linspace(-10, 10, 201), [0.0, -0.0]),
    # acosh: exactly 1, just above, huge; below 1 is NaN in both
    "Acosh": spread(1 + np.geomspace(1.2e-7, 1e-2, 200), np.geomspace(1, 3e38, 400),
                    [1.0, 0.99999994, 0.5, 0.0, -3.0]),
    # atanh: tiny, near +-1, outside (NaN in both)
    "Atanh": spread(np.linspace(-0.999, 0.999, 401), TINY, -TINY, 1 - np.geomspace(6e-8, 1e-2, 200),
                    -1 + np.geomspace(6e-8, 1e-2, 200), [0.0, -0.0, 1.5, -2.0]),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Every op converted once and run in the real ncnn and the interpreter on its INPUTS."""
    results = {}
    for op, x in INPUTS.items():
        model = make_model([helper.make_node(op, ["x"], ["y"])], [("x", [1, x.size])], [("y", None)])
        converted = convert(model)
        folder = tmp_path_factory.mktemp(op)
        converted.save(folder / "m.param", folder / "m.bin")
        feeds = {"x": x[None]}
        real = run_ncnn(folder / "m.param", folder / "m.bin", {"x": x}, ["y"])["y"]
        ours = converted.run(feeds)["y"]
        results[op] = (x, onnxruntime_outputs(model, feeds)["y"][0], real.reshape(-1), ours.reshape(-1),
                       [n.op for n in converted.graph.topological()])
    return results


@pytest.mark.parametrize("op", INPUTS)
@pytest.mark.parametrize("backend", ["ncnn", "interpreter"])
def test_matches_onnxruntime_elementwise(runs, op, backend):
    """Relative error 1e-3 per element (not of the tensor's max): small values are checked too;
    infs and NaNs at the same places."""
    x, want, real, ours, _ = runs[op]
    got = real if backend == "ncnn" else ours
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=0, err_msg=f"{op} inputs {x}")


def test_sign_is_exact(runs):
    x, want, real, ours, _ = runs["Sign"]
    np.testing.assert_array_equal(real, want)
    np.testing.assert_array_equal(ours, want)


def test_layers_used(runs):
    assert runs["Sign"][4] == ["Input", "UnaryOp"]
    assert runs["Atanh"][4] == ["Input", "UnaryOp"]
    assert "BinaryOp" in runs["Sinh"][4] and "BinaryOp" in runs["Asinh"][4]


def test_documented_edges_in_real_ncnn(tmp_path):
    """What hyperbolic.py states and cannot fix: atanh(+-1) is NaN (onnxruntime: +-inf), asinh
    beyond 1.7e38 stops at 88.72 (ncnn's log of inf)."""
    x = np.array([1.0, -1.0, 3e38, np.inf], np.float32)
    got = {}
    for op in ("Atanh", "Asinh"):
        model = make_model([helper.make_node(op, ["x"], ["y"])], [("x", [1, 4])], [("y", None)])
        convert(model).save(tmp_path / f"{op}.param", tmp_path / f"{op}.bin")
        got[op] = run_ncnn(tmp_path / f"{op}.param", tmp_path / f"{op}.bin", {"x": x}, ["y"])["y"]
    assert np.isnan(got["Atanh"][:2]).all()
    np.testing.assert_allclose(got["Asinh"][2:], [88.72284, 88.72284], rtol=1e-6)
