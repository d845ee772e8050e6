"""Issue 24 item 1: an output ncnn holds as int32 bits (a model returning its input_ids, as
sentence-transformers exports do) is declared int32 in the .json, and verify, run and the
generated script read it as int32 (a float32 read gives 1.4e-43 for the id 100)."""
import json
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import converter
from test_convert_cli import run_cli


def ids_model(length=8, vocab=50) -> onnx.ModelProto:
    """ids -> (embedding rows, ids unchanged through Identity, ids reshaped)."""
    table = np.random.default_rng(0).standard_normal((vocab, 4)).astype(np.float32)
    nodes = [helper.make_node("Gather", ["table", "ids"], ["emb"]),
             helper.make_node("Identity", ["ids"], ["ids_out"]),
             helper.make_node("Reshape", ["ids", "shape"], ["ids_flat"])]
    graph = helper.make_graph(
        nodes, "ids", [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, length])],
        [helper.make_tensor_value_info("emb", TensorProto.FLOAT, [1, length, 4]),
         helper.make_tensor_value_info("ids_out", TensorProto.INT64, [1, length]),
         helper.make_tensor_value_info("ids_flat", TensorProto.INT64, [length])],
        [numpy_helper.from_array(table, "table"), numpy_helper.from_array(np.array([length]), "shape")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_passed_through_ids_are_declared_int32(tmp_path):
    onnx.save(ids_model(), str(tmp_path / "ids.onnx"))
    result = run_cli("convert", tmp_path / "ids.onnx", "-o", tmp_path, "--json")
    assert result.returncode == 0, result.stderr
    record = json.loads((tmp_path / "ids.ncnn.json").read_text())
    dtypes = {e["onnx"]: e["dtype"] for e in record["outputs"]}
    assert dtypes == {"emb": "float32", "ids_out": "int32", "ids_flat": "int32"}


def test_interpreter_and_real_ncnn_give_the_ids_back(tmp_path):
    onnx.save(ids_model(), str(tmp_path / "ids.onnx"))
    assert run_cli("convert", tmp_path / "ids.onnx", "-o", tmp_path).returncode == 0
    ids = np.array([[3, 100 % 50, 7, 49, 0, 1, 2, 30]], np.int64)
    got = converter.load_ncnn(tmp_path / "ids.ncnn.param", tmp_path / "ids.ncnn.bin").run({"ids": ids})
    assert got["ids_out"].dtype == np.int32
    np.testing.assert_array_equal(got["ids_out"], ids)
    np.testing.assert_array_equal(got["ids_flat"], ids[0])
    # the generated script reads the real ncnn's Mat as int32 and --check agrees with onnxruntime
    script = tmp_path / "ids_ncnn.py"
    np.save(tmp_path / "ids.npy", ids)
    run = subprocess.run([sys.executable, "-I", script, "--check", f"ids={tmp_path / 'ids.npy'}"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "ok ids_out" in run.stdout and "MISMATCH" not in run.stdout


def test_verify_passes_on_both_backends(tmp_path):
    onnx.save(ids_model(), str(tmp_path / "ids.onnx"))
    result = run_cli("verify", tmp_path / "ids.onnx", "--backend", "both", "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    outputs = json.loads(result.stdout)["outputs"]
    assert {(o["backend"], o["name"]) for o in outputs if o["passed"]} >= {("ncnn", "ids_out"), ("interp", "ids_out")}
