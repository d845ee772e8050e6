"""convert --nchw-input: a channels-last image input (a keras-style export: [N, H, W, 3], x / 255 - mean,
then one Transpose(0,3,1,2) that two Convs read) becomes ncnn's Input c,h,w with the Transpose gone;
the .json record's onnx_to_ncnn_perm makes every reader feed the NHWC array channels-first."""
import contextlib
import io
import json
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import converter
from converter.cli import main
from converter.ir import ConversionError
from converter.ncnn_side.layout import PERM_KEY, to_ncnn
from converter.ncnn_side.runtime import run_ncnn
from converter.verification.image_input import parse_image_spec
from onnx_cases import MODELS

NHWC = MODELS / "layouts" / "nhwc_classifier.onnx"      # scripts/export_nhwc.py
HINT = "--nchw-input image"


def cli(*args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def onnxruntime_logits(x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(NHWC), providers=["CPUExecutionProvider"])
    return session.run(None, {"image": x})[0]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The model converted with the option and without: (folder, stderr) each."""
    moved, plain = tmp_path_factory.mktemp("moved"), tmp_path_factory.mktemp("plain")
    code, _, moved_err = cli("convert", NHWC, "-o", moved, "--nchw-input", "image")
    assert code == 0, moved_err
    code, _, plain_err = cli("convert", NHWC, "-o", plain)
    assert code == 0, plain_err
    return (moved, moved_err), (plain, plain_err)


@pytest.fixture(scope="module")
def pixels():
    return (np.random.default_rng(3).uniform(0, 255, (1, 24, 32, 3))).astype(np.float32)


def layers(param) -> list[list[str]]:
    return [line.split() for line in param.read_text().splitlines()[2:]]


def test_real_ncnn_fed_channels_first_through_the_record_matches_onnxruntime_fed_nhwc(files, pixels):
    (moved, _), _ = files
    record = json.loads((moved / "nhwc_classifier.ncnn.json").read_text())
    entry = record["inputs"][0]
    assert entry[PERM_KEY] == [0, 3, 1, 2] and entry["onnx_shape"] == [1, 24, 32, 3]
    assert entry["ncnn_shape"] == [3, 24, 32]
    fed = to_ncnn(pixels, entry)
    np.testing.assert_array_equal(fed, pixels[0].transpose(2, 0, 1))       # c, h, w
    got = run_ncnn(moved / "nhwc_classifier.ncnn.param", moved / "nhwc_classifier.ncnn.bin",
                   {entry["ncnn"]: fed}, ["logits"])["logits"]
    np.testing.assert_allclose(got, onnxruntime_logits(pixels)[0], rtol=1e-4, atol=1e-5)


def test_the_input_layer_is_chw_and_no_transposition_is_left(files):
    (moved, _), (plain, _) = files
    moved_layers, plain_layers = layers(moved / "nhwc_classifier.ncnn.param"), layers(plain / "nhwc_classifier.ncnn.param")
    assert moved_layers[0][0] == "Input" and moved_layers[0][5:] == ["0=32", "1=24", "2=3"]     # w, h, c
    assert plain_layers[0][5:] == ["0=3", "1=32", "2=24"]          # without the option: c=24, h=32, w=3
    assert "Permute" in [layer[0] for layer in plain_layers]
    assert "Permute" not in [layer[0] for layer in moved_layers]
    # the normalisation runs channels-first: its per-channel mean is a [3, 1, 1] constant
    assert any(layer[0] == "MemoryData" and layer[5:] == ["0=1", "1=1", "2=3"] for layer in moved_layers)


def test_a_hint_names_the_option_without_it_and_not_with_it(files):
    (_, moved_err), (_, plain_err) = files
    hints = [line for line in plain_err.splitlines() if HINT in line]
    assert len(hints) == 1 and "channels-last" in hints[0], plain_err
    assert HINT not in moved_err


def test_an_input_without_a_layout_change_is_refused_in_one_line(tmp_path):
    code, out, err = cli("convert", MODELS / "cnn_small.onnx", "-o", tmp_path, "--nchw-input", "input")
    assert code == 2 and len(err.strip().splitlines()) == 1 and not out, err
    assert "--nchw-input input: no Transpose to channels-first" in err and "Conv" in err
    assert not list(tmp_path.iterdir())
    code, _, err = cli("convert", MODELS / "cnn_small.onnx", "-o", tmp_path, "--nchw-input", "nope")
    assert code == 2 and "has no input 'nope'; its inputs are input" in err


def test_run_verify_and_the_script_take_nhwc(files, pixels, tmp_path):
    (moved, _), _ = files
    want = onnxruntime_logits(pixels)
    np.save(tmp_path / "x.npy", pixels)
    param, bin_ = moved / "nhwc_classifier.ncnn.param", moved / "nhwc_classifier.ncnn.bin"
    for backend in ("interp", "ncnn"):
        out = tmp_path / f"{backend}.npz"
        code, _, err = cli("run", param, bin_, "--input", f"image={tmp_path / 'x.npy'}", "--backend", backend, "-o", out)
        assert code == 0, err
        np.testing.assert_allclose(np.load(out)["logits"], want, rtol=1e-4, atol=1e-5)
    # ncnn's own layout: a channels-first array, no batch axis
    np.save(tmp_path / "chw.npy", pixels[0].transpose(2, 0, 1))
    code, _, err = cli("run", param, bin_, "--input", f"image={tmp_path / 'chw.npy'}", "--layout", "ncnn",
                       "-o", tmp_path / "chw.npz")
    assert code == 0, err
    np.testing.assert_allclose(np.load(tmp_path / "chw.npz")["logits"], want[0], rtol=1e-4, atol=1e-5)
    # an image, letterboxed, decoded in the ONNX layout (as onnxruntime takes it), then channels-first
    image = tmp_path / "cat.ppm"
    image.write_bytes(b"P6 30 20 255\n" + np.random.default_rng(4).integers(0, 256, (20, 30, 3), np.uint8).tobytes())
    spec = f"image={image}:fit=letterbox,scale=1"
    want_image = onnxruntime_logits(parse_image_spec("image", spec.partition("=")[2]).to_array("image", [1, 24, 32, 3]))
    code, _, err = cli("run", param, bin_, "--input", spec, "--backend", "ncnn", "-o", tmp_path / "image.npz")
    assert code == 0, err
    np.testing.assert_allclose(np.load(tmp_path / "image.npz")["logits"], want_image, rtol=1e-4, atol=1e-5)
    # verify feeds onnxruntime NHWC and ncnn channels-first: user arrays, images, ncnn-layout Mats alike
    for feed, *layout in ((f"image={tmp_path / 'x.npy'}",), (spec,), (f"image={tmp_path / 'chw.npy'}", "--layout", "ncnn")):
        code, out, err = cli("verify", NHWC, "--nchw-input", "image", "--backend", "both", "--input", feed, *layout)
        assert code == 0 and "PASSED" in out and "[1, 24, 32, 3]" in out, out + err
    # the generated script: NHWC arrays in, --check against onnxruntime
    script = moved / "nhwc_classifier_ncnn.py"
    run = subprocess.run([sys.executable, "-I", script, "--check", f"image={tmp_path / 'x.npy'}"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0 and "ok logits" in run.stdout, run.stdout + run.stderr


def _uint8_model(extra_reader: bool) -> onnx.ModelProto:
    """uint8 NHWC pixels -> Cast -> * (1/255) -> Transpose(0,3,1,2) -> Conv, as tf2onnx writes them;
    `extra_reader`: a ReduceMean also reads the pixels channels-last."""
    nodes = [helper.make_node("Cast", ["x"], ["xf"], to=TensorProto.FLOAT), helper.make_node("Mul", ["xf", "s"], ["xs"]),
             helper.make_node("Transpose", ["xs"], ["xt"], perm=[0, 3, 1, 2]), helper.make_node("Conv", ["xt", "w"], ["y"])]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    if extra_reader:
        nodes.append(helper.make_node("ReduceMean", ["xf"], ["r"], axes=[3]))
        outputs.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, None))
    weights = [numpy_helper.from_array(np.random.default_rng(0).normal(size=(4, 3, 1, 1)).astype(np.float32), "w"),
               numpy_helper.from_array(np.array(1 / 255, np.float32), "s")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 8, 6, 3])],
                              outputs, weights)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_cast_and_scale_before_the_transpose_move_with_it_and_a_channels_last_reader_is_refused():
    model = _uint8_model(extra_reader=False)
    x = np.random.default_rng(1).integers(0, 256, (1, 8, 6, 3)).astype(np.uint8)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    converted = converter.convert(model, nchw_inputs=["x"])
    assert converted.io()["inputs"][0]["ncnn_shape"] == [3, 8, 6]
    assert not any(n.op in ("Permute", "Transpose") for n in converted.graph.nodes.values())
    np.testing.assert_allclose(converted.run({"x": x})["y"], want, rtol=1e-5, atol=1e-5)
    with pytest.raises(ConversionError, match="ReduceMean .* besides the Transpose to channels-first"):
        converter.convert(_uint8_model(extra_reader=True), nchw_inputs=["x"])
    assert not any(HINT.split()[0] in note for note in converter.convert(_uint8_model(extra_reader=True)).graph.notes)
