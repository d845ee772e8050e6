"""What a first-time user of the command line sees: help, version, error prefixes, messages
that name the real cause."""
import numpy as np
import pytest

from converter.cli import build_parser
from onnx_cases import MODELS
from test_convert_cli import add_model, assert_bad_input, run_cli, save


def test_every_option_has_help_and_says_its_default():
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices
    for name, command in commands.items():
        for action in command._actions:
            if action.dest == "help":
                continue
            assert action.help, f"{name} {action.option_strings or action.dest} has no help"
            if action.option_strings and action.default not in (None, False):
                assert "default" in action.help, f"{name} {action.option_strings} hides its default"


def test_version():
    result = run_cli("--version")
    assert result.returncode == 0 and result.stdout.startswith("onnx2ncnn ")


def test_no_arguments_prints_the_usage():
    result = run_cli()
    assert result.returncode == 2
    assert "usage: onnx2ncnn" in result.stderr and "convert" in result.stderr and "verify" in result.stderr


def test_usage_error_names_the_program_once():
    result = run_cli("convert")
    assert_bad_input(result, "onnx2ncnn: error: convert: the following arguments are required")
    assert result.stderr.count("onnx2ncnn") == 1


def test_broadcast_demo_says_what_was_changed(tmp_path):
    result = run_cli("convert", MODELS / "bcast_demo.onnx", "-o", tmp_path)
    assert result.returncode == 0, result.stderr
    assert "4 constant(s) laid out anew" in result.stdout and "0 broadcast" not in result.stdout


def test_run_with_an_unknown_input_lists_the_real_ones(tmp_path):
    model = save(add_model(), tmp_path / "m.onnx")
    assert run_cli("convert", model).returncode == 0
    np.save(tmp_path / "x.npy", np.zeros((3, 4), np.float32))
    result = run_cli("run", tmp_path / "m.ncnn.param", tmp_path / "m.ncnn.bin", "--input", f"nope={tmp_path / 'x.npy'}")
    assert_bad_input(result, "unknown input(s) nope", "the model's inputs are x")


@pytest.mark.parametrize("keep", [0.5, 0.999])
def test_a_truncated_onnx_file_is_called_truncated(tmp_path, keep):
    data = (MODELS / "cnn_small.onnx").read_bytes()
    (tmp_path / "cut.onnx").write_bytes(data[:int(len(data) * keep)])
    assert_bad_input(run_cli("convert", tmp_path / "cut.onnx"), "the file is truncated", "again")


def test_a_non_onnx_file_is_still_called_not_onnx(tmp_path):
    (tmp_path / "x.onnx").write_bytes(bytes(range(256)) * 4)
    assert_bad_input(run_cli("convert", tmp_path / "x.onnx"), "not a valid ONNX")
