"""One layout for the user: ONNX-shaped arrays in and out of convert's files, run and verify;
ncnn's own layout (no batch axis) only when asked for with layout='ncnn' / --layout ncnn."""
import json

import numpy as np
import onnx
import pytest
from onnx import helper

import converter
from onnx_cases import MODELS, make_model, onnxruntime_outputs, random_inputs
from test_convert_cli import assert_bad_input, run_cli

BCAST = MODELS / "bcast_demo.onnx"


@pytest.fixture(scope="module")
def bcast_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bcast")
    assert run_cli("convert", BCAST, "-o", folder).returncode == 0
    model = onnx.load(str(BCAST))
    feeds = random_inputs(model)
    for name, value in feeds.items():
        np.save(folder / f"{name}.npy", value)
    return folder, feeds, onnxruntime_outputs(model, feeds)


def assert_like_onnxruntime(got: dict, want: dict):
    assert set(got) == set(want)
    for name, value in want.items():
        assert got[name].shape == value.shape, name
        np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-6, err_msg=name)


def test_converted_model_takes_and_gives_onnx_shapes(bcast_files):
    _, feeds, want = bcast_files
    assert_like_onnxruntime(converter.convert(BCAST).run(feeds), want)


def test_files_read_back_take_and_give_onnx_shapes(bcast_files):
    folder, feeds, want = bcast_files
    model = converter.load_ncnn(folder / "bcast_demo.ncnn.param", folder / "bcast_demo.ncnn.bin")
    assert_like_onnxruntime(model.run(feeds), want)
    ncnn = model.run({k: v[0] for k, v in feeds.items()}, layout="ncnn")
    assert {k: v.shape for k, v in ncnn.items()} == {k: v.shape[1:] for k, v in want.items()}


def test_cli_run_takes_onnx_shaped_npy(bcast_files, tmp_path):
    folder, feeds, want = bcast_files
    result = run_cli("run", folder / "bcast_demo.ncnn.param", folder / "bcast_demo.ncnn.bin",
                     *[f"--input={n}={folder / (n + '.npy')}" for n in feeds], "-o", tmp_path / "o.npz")
    assert result.returncode == 0, result.stderr
    assert_like_onnxruntime(dict(np.load(tmp_path / "o.npz")), want)


def test_an_ncnn_shaped_array_gets_a_hint(bcast_files, tmp_path):
    folder, feeds, _ = bcast_files
    np.save(tmp_path / "x.npy", feeds["x"][0])
    args = [f"--input=x={tmp_path / 'x.npy'}", f"--input=seq={folder / 'seq.npy'}"]
    assert_bad_input(run_cli("run", folder / "bcast_demo.ncnn.param", folder / "bcast_demo.ncnn.bin", *args),
                     "does not fit its ONNX shape [1, 4, 6, 4]", "--layout ncnn")
    assert_bad_input(run_cli("verify", BCAST, *args), "--layout ncnn")


def test_verify_takes_ncnn_layout_when_told(bcast_files, tmp_path):
    _, feeds, _ = bcast_files
    for name, value in feeds.items():
        np.save(tmp_path / f"{name}.npy", value[0])
    result = run_cli("verify", BCAST, "--layout", "ncnn", "--json",
                     *[f"--input={n}={tmp_path / (n + '.npy')}" for n in feeds])
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["inputs"] == {"x": [1, 4, 6, 4], "seq": [1, 8, 8]}


def test_a_foreign_json_beside_the_files_is_ignored(tmp_path):
    model = converter.convert(BCAST)
    model.save(tmp_path / "m.param", tmp_path / "m.bin")
    (tmp_path / "m.json").write_text(json.dumps({"format": "something else", "inputs": []}))
    loaded = converter.load_ncnn(tmp_path / "m.param", tmp_path / "m.bin")
    x = np.zeros((4, 6, 4), np.float32)
    assert loaded.run({"x": x, "seq": np.zeros((8, 8), np.float32)})["out_image"].shape == (4, 6, 4)


def test_bare_files_with_declared_input_extents_take_a_batched_array(tmp_path):
    """pnnx-style files carry no batch record; an Input's declared extents tell the rank."""
    (tmp_path / "m.param").write_text("7767517\n2 2\nInput in 0 1 x 0=5 1=4 2=3\nReLU r 1 1 x y\n")
    (tmp_path / "m.bin").write_bytes(b"")
    model = converter.load_ncnn(tmp_path / "m.param", tmp_path / "m.bin")
    x = np.random.default_rng(0).standard_normal((1, 3, 4, 5)).astype(np.float32)
    np.testing.assert_array_equal(model.run({"x": x})["y"], np.maximum(x[0], 0))
    np.testing.assert_array_equal(model.run({"x": x[0]})["y"], np.maximum(x[0], 0))


def test_an_inner_batch_axis_comes_back_where_it_was(tmp_path):
    """Like silero's state output [2, 1, 128], which ncnn gives as [2, 128]."""
    nodes = [helper.make_node("Relu", ["s"], ["t"]), helper.make_node("Transpose", ["t"], ["y"], perm=[1, 0, 2])]
    model = make_model(nodes, [("s", [1, 2, 4])], [("y", [2, 1, 4])])
    converted = converter.convert(model)
    out = converted.io()["outputs"][0]
    s = np.random.default_rng(1).standard_normal((1, 2, 4)).astype(np.float32)
    want = onnxruntime_outputs(model, {"s": s})
    got = converted.run({"s": s})
    assert got["y"].shape == (2, 1, 4) and out["batch_axis"] == 1
    np.testing.assert_allclose(got["y"], want["y"], rtol=1e-6)
