"""convert --nchw-input: a channels-last image input (a keras-style export: [N, H, W, 3], x / 255 - mean,
then one Transpose(0,3,1,2) that two Convs read) becomes ncnn's Input c,h,w with the Transpose gone;
the .json record's onnx_to_ncnn_perm makes every reader feed the NHWC array channels-first."""
import contextlib
import io
import json
import subprocess
import sys

import numpy as np
import onnxruntime as ort
import pytest

from converter.cli import main
from converter.ncnn_side.layout import PERM_KEY, to_ncnn, to_onnx
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
    # a record with the key is format 2: a reader of format 1 alone ignores it (it would feed NHWC as is)
    assert record["format"] == "onnx2ncnn-io/2"
    assert json.loads((files[1][0] / "nhwc_classifier.ncnn.json").read_text())["format"] == "onnx2ncnn-io/1"
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
    for backend, feed, *layout in (("both", spec), ("interp", f"image={tmp_path / 'x.npy'}"),
                                   ("interp", f"image={tmp_path / 'chw.npy'}", "--layout", "ncnn")):
        code, out, err = cli("verify", NHWC, "--nchw-input", "image", "--backend", backend, "--input", feed, *layout)
        assert code == 0 and "PASSED" in out and "[1, 24, 32, 3]" in out, out + err
    # the generated script: NHWC arrays in, --check against onnxruntime
    script = moved / "nhwc_classifier_ncnn.py"
    run = subprocess.run([sys.executable, "-I", script, "--check", f"image={tmp_path / 'x.npy'}"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0 and "ok logits" in run.stdout, run.stdout + run.stderr


def test_the_record_key_drives_to_ncnn_and_to_onnx_and_records_without_it_read_as_before(pixels):
    entry = {"onnx": "image", "ncnn": "image", "onnx_shape": [1, 24, 32, 3], "ncnn_shape": [3, 24, 32],
             "batch_axis": 0, "dtype": "float32", PERM_KEY: [0, 3, 1, 2]}
    mat = to_ncnn(pixels, entry)
    np.testing.assert_array_equal(mat, pixels[0].transpose(2, 0, 1))
    np.testing.assert_array_equal(to_onnx(mat, entry), pixels)
    old = {k: v for k, v in entry.items() if k != PERM_KEY} | {"ncnn_shape": [24, 32, 3]}
    np.testing.assert_array_equal(to_ncnn(pixels, old), pixels[0])       # as before the key: the batch axis dropped
    np.testing.assert_array_equal(to_onnx(pixels[0], old), pixels)

