"""Issue 24 item 4: random integer inputs stay inside every table they index (a token-type table
of 2 rows: a draw of 3 is an out-of-bounds Gather in onnxruntime), in verify and in the
generated script's --check; integers that index nothing draw 0 or 1 (a mask)."""
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from converter.shapes.index_limits import index_limits, random_high
from test_convert_cli import run_cli


def token_type_model() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    words, types = rng.standard_normal((30, 4)).astype(np.float32), rng.standard_normal((2, 4)).astype(np.float32)
    nodes = [helper.make_node("Gather", ["words", "ids"], ["w"]),
             helper.make_node("Cast", ["types_in"], ["types_i32"], to=TensorProto.INT32),
             helper.make_node("Gather", ["types", "types_i32"], ["t"]),
             helper.make_node("Add", ["w", "t"], ["sum"]),
             helper.make_node("Cast", ["mask"], ["mask_f"], to=TensorProto.FLOAT),
             helper.make_node("Unsqueeze", ["mask_f", "axis"], ["mask_u"]),
             helper.make_node("Mul", ["sum", "mask_u"], ["y"])]
    graph = helper.make_graph(
        nodes, "tt", [helper.make_tensor_value_info(n, TensorProto.INT64, [1, 8]) for n in ("ids", "types_in", "mask")],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 4])],
        [numpy_helper.from_array(words, "words"), numpy_helper.from_array(types, "types"),
         numpy_helper.from_array(np.array([2]), "axis")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_limits_follow_casts_to_the_smallest_table():
    limits = index_limits(token_type_model())
    assert limits == {"ids": 30, "types_in": 2}
    assert (random_high(limits, "ids"), random_high(limits, "types_in"), random_high(limits, "mask")) == (4, 2, 2)


def test_verify_and_the_script_draw_valid_token_types(tmp_path):
    onnx.save(token_type_model(), str(tmp_path / "tt.onnx"))
    for seed in ("0", "1", "2"):
        result = run_cli("verify", tmp_path / "tt.onnx", "--seed", seed)
        assert result.returncode == 0, result.stdout + result.stderr
    assert run_cli("convert", tmp_path / "tt.onnx", "-o", tmp_path).returncode == 0
    run = subprocess.run([sys.executable, "-I", tmp_path / "tt_ncnn.py", "--check"], capture_output=True, text=True)
    assert run.returncode == 0 and "ok y" in run.stdout, run.stdout + run.stderr
