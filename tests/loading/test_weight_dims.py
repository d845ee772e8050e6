"""Issue 24 item 3: input dims a weight fixes are fixed at load (madmom's chroma_dnn: a MatMul by
a 1575 x 256 weight reads input [?, ?]), so verify feeds the width onnxruntime accepts."""
import numpy as np
from onnx import helper

import converter
from converter.onnx_side.loader import prepare_model
from onnx_cases import make_model


def run_cli(*args):
    import subprocess
    import sys
    return subprocess.run([sys.executable, "-m", "converter", *map(str, args)], capture_output=True, text=True)


def save(model, path):
    import onnx
    onnx.save(model, str(path))
    return path


def dense(k=24, n=5):
    w = np.random.default_rng(0).standard_normal((k, n)).astype(np.float32)
    return make_model([helper.make_node("MatMul", ["x", "w"], ["y"])], [("x", [None, None])], [("y", None)],
                      [("w", w)])


def conv(c=6, group=2):
    w = np.random.default_rng(0).standard_normal((4, c // group, 3, 3)).astype(np.float32)
    return make_model([helper.make_node("Conv", ["x", "w"], ["y"], group=group)], [("x", [1, None, 8, 8])],
                      [("y", None)], [("w", w)])


def dims(proto, name="x"):
    vi = next(v for v in proto.graph.input if v.name == name)
    return [d.dim_value if d.HasField("dim_value") else None for d in vi.type.tensor_type.shape.dim]


def test_matmul_and_conv_weights_fix_the_input_dims():
    assert dims(prepare_model(dense())) == [1, 24]
    assert dims(prepare_model(conv())) == [1, 6, 8, 8]


def test_a_users_shape_wins():
    assert dims(prepare_model(dense(), {"x": [1, None]})) == [1, None]


def test_verify_runs_at_the_fixed_width(tmp_path):
    result = run_cli("verify", save(dense(), tmp_path / "dense.onnx"), "--backend", "both")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "x [1, 24]" in result.stdout
    assert converter.convert(dense()).io()["inputs"][0]["onnx_shape"] == [1, 24]
