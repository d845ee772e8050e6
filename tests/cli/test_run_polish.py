"""Issue 24 items 5 and 6: a .bin that cannot be written leaves no .param behind; run's output
path, unknown input names and non-.npy files end in one line; run in the real ncnn and timing."""
import numpy as np
import pytest

from onnx_cases import MODELS
from test_convert_cli import assert_bad_input, run_cli


@pytest.fixture
def files(tmp_path):
    assert run_cli("convert", MODELS / "bcast_demo.onnx", "-o", tmp_path).returncode == 0
    rng = np.random.default_rng(0)
    np.save(tmp_path / "x.npy", rng.standard_normal((1, 4, 6, 4)).astype(np.float32))
    np.save(tmp_path / "seq.npy", rng.standard_normal((1, 8, 8)).astype(np.float32))
    return [tmp_path / "bcast_demo.ncnn.param", tmp_path / "bcast_demo.ncnn.bin",
            "--input", f"x={tmp_path / 'x.npy'}", "--input", f"seq={tmp_path / 'seq.npy'}"]


def test_a_bin_path_that_is_a_folder_leaves_nothing(tmp_path):
    (tmp_path / "bcast_demo.ncnn.bin").mkdir()
    assert_bad_input(run_cli("convert", MODELS / "bcast_demo.onnx", "-o", tmp_path), "bcast_demo.ncnn.bin",
                     "is a folder")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bcast_demo.ncnn.bin"]


def test_output_paths_are_checked_before_running(tmp_path, files):
    assert_bad_input(run_cli("run", *files, "-o", tmp_path / "missing" / "out.npz"), "does not exist")
    assert_bad_input(run_cli("run", *files, "-o", tmp_path / "out.txt"), ".npz")
    assert not (tmp_path / "out.txt.npz").exists()


def test_unknown_input_names_are_listed_even_for_images(tmp_path, files):
    image = tmp_path / "im.ppm"
    image.write_bytes(b"P6\n2 2\n255\n" + bytes(range(12)))
    assert_bad_input(run_cli("run", *files[:2], "--input", f"nope={image}"), "unknown input(s) nope",
                     "inputs are x, seq")


def test_a_text_file_is_not_a_npy(tmp_path, files):
    (tmp_path / "t.npy").write_text("1 2 3\n")
    assert_bad_input(run_cli("run", *files[:2], "--input", f"x={tmp_path / 't.npy'}"), "is not a .npy file")


def test_real_ncnn_gives_the_interpreters_outputs_and_times(tmp_path, files):
    interp, ncnn_out = tmp_path / "interp.npz", tmp_path / "ncnn.npz"
    assert run_cli("run", *files, "-o", interp).returncode == 0
    result = run_cli("run", *files, "-o", ncnn_out, "--backend", "ncnn", "--threads", "1", "--time", "3",
                     "--warmup", "1")
    assert result.returncode == 0, result.stderr
    assert "ncnn (1 thread): min" in result.stdout and "over 3 runs" in result.stdout
    got, want = np.load(ncnn_out), np.load(interp)
    assert sorted(got) == sorted(want) == ["out_image", "out_seq"]
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6)


def test_json_names_the_record_and_int8_layers(tmp_path):
    import json
    result = run_cli("convert", MODELS / "bcast_demo.onnx", "-o", tmp_path, "--json")
    printed = json.loads(result.stdout)
    assert printed["json"] == str(tmp_path / "bcast_demo.ncnn.json") and printed["int8_layers"] == 0
    assert json.loads((tmp_path / "bcast_demo.ncnn.json").read_text())["inputs"][0]["onnx"] == "x"


def test_version_attribute_matches_the_cli():
    import converter
    assert run_cli("--version").stdout.split()[-1] == converter.__version__


def test_verify_takes_quiet_and_writes_no_progress_into_a_pipe():
    for extra in ([], ["--quiet"]):
        result = run_cli("verify", MODELS / "bcast_demo.onnx", *extra)
        assert result.returncode == 0 and result.stderr == "", result.stderr


def test_generated_script_help_missing_file_and_moved_folder(tmp_path):
    import shutil
    import subprocess
    import sys
    shutil.copy(MODELS / "bcast_demo.onnx", tmp_path / "bcast_demo.onnx")
    assert run_cli("convert", tmp_path / "bcast_demo.onnx", "-o", tmp_path / "out").returncode == 0
    (tmp_path / "out").rename(tmp_path / "moved")
    script = tmp_path / "moved" / "bcast_demo_ncnn.py"
    def run(*args):
        return subprocess.run([sys.executable, "-I", script, *args], capture_output=True, text=True)
    assert run("--check").returncode == 0       # the .onnx found by its absolute path
    helped = run("--help")
    assert helped.returncode == 0 and "--check" in helped.stdout
    missing = run(f"x={tmp_path / 'nope.npy'}")
    assert missing.returncode == 1 and "Traceback" not in missing.stderr and "nope.npy" in missing.stderr
