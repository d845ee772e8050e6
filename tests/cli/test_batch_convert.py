"""`onnx2ncnn convert a.onnx b.onnx folder/ -o out -j N`: a summary table or one JSON list, exit 2
when any model is refused, the same files a one-model convert writes; progress only on a terminal."""
import io
import json
import os
import pty
import subprocess
import sys

import pytest
from onnx import helper
from onnx_cases import make_model
from test_convert_cli import add_model, assert_bad_input, run_cli, save

from converter import batch_convert, convert
from converter.cli import Progress


def relu_model(input_name="y"):
    return make_model([helper.make_node("Relu", [input_name], ["r"])], [(input_name, ["N", 2, "W"])],
                      [("r", ["N", 2, "W"])])


def refused_model():
    # no ncnn layer computes Unique: the converter refuses it, naming the op
    return make_model([helper.make_node("Unique", ["v"], ["u"], sorted=1)], [("v", [4])], [("u", None)])


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("batch")
    folder = root / "folder"
    folder.mkdir()
    save(add_model(), folder / "b_add.onnx")
    save(refused_model(), folder / "c_unique.onnx")
    (folder / "notes.txt").write_text("not a model")
    save(relu_model(), root / "a_relu.onnx")
    return root


@pytest.fixture(scope="module")
def batch(models):
    """One two-worker batch over a file and a folder, in table form, shared by the tests below."""
    return run_cli("convert", models / "a_relu.onnx", models / "folder", "-o", models / "out", "-j", "2")


def test_table_lists_models_in_order_and_exit_says_one_was_refused(batch, models):
    assert batch.returncode == 2, batch.stderr
    lines = batch.stdout.strip().splitlines()
    assert lines[0].split() == ["model", "status", "layers", "seconds", "note"]
    rows = lines[1:4]
    assert [r.split()[0] for r in rows] == [str(models / "a_relu.onnx"), str(models / "folder" / "b_add.onnx"),
                                            str(models / "folder" / "c_unique.onnx")]
    assert [r.split()[1] for r in rows] == ["ok", "ok", "refused"]
    assert rows[1].split()[2] == "3"                # Input, MemoryData, BinaryOp
    assert "Unique" in rows[2]
    assert lines[4] == "converted 2 of 3 models; 1 refused or failed"
    assert batch.stderr == ""                       # not a terminal: no progress lines
    written = sorted(p.name for p in (models / "out").iterdir())
    assert "a_relu.ncnn.param" in written and "b_add.ncnn.bin" in written
    assert not any(name.startswith("c_unique") for name in written)


def test_batch_writes_the_files_a_single_convert_writes(batch, models, tmp_path):
    single = run_cli("convert", models / "folder" / "b_add.onnx", "-o", tmp_path)
    assert single.returncode == 0, single.stderr
    assert single.stdout.startswith(f"wrote {tmp_path / 'b_add.ncnn.param'}")     # today's one-model output
    for suffix in (".ncnn.param", ".ncnn.bin", ".ncnn.json"):
        assert (tmp_path / f"b_add{suffix}").read_bytes() == (models / "out" / f"b_add{suffix}").read_bytes()


def test_json_is_one_list_and_shapes_apply_where_the_input_exists(models, tmp_path):
    save(relu_model("x"), tmp_path / "relu_x.onnx")
    result = run_cli("convert", models / "a_relu.onnx", tmp_path / "relu_x.onnx", models / "folder" / "c_unique.onnx",
                     "-o", tmp_path / "out", "--input-shape", "x=1,2,5", "--json")
    assert result.returncode == 2, result.stderr
    rows = json.loads(result.stdout)
    assert [(r["model"], r["status"]) for r in rows] == [(str(models / "a_relu.onnx"), "ok"),
                                                         (str(tmp_path / "relu_x.onnx"), "ok"),
                                                         (str(models / "folder" / "c_unique.onnx"), "refused")]
    assert rows[0]["inputs"][0]["onnx_shape"] == [1, 2, None]        # y: no --input-shape for it
    assert rows[1]["inputs"][0]["onnx_shape"] == [1, 2, 5]           # x: fixed
    assert rows[1]["param"] == str(tmp_path / "out" / "relu_x.ncnn.param")
    assert "Unique" in rows[2]["error"] and "layers" not in rows[2]


def test_all_converted_exits_zero(models, tmp_path):
    result = run_cli("convert", models / "a_relu.onnx", models / "folder" / "b_add.onnx", "-o", tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "converted 2 of 2 models"


def test_two_models_writing_the_same_files_are_refused_before_any_is_converted(models, tmp_path):
    other = tmp_path / "elsewhere"
    other.mkdir()
    save(add_model(), other / "a_relu.onnx")
    result = run_cli("convert", models / "a_relu.onnx", other / "a_relu.onnx", "-o", tmp_path / "out")
    assert_bad_input(result, "would both write a_relu.ncnn.param")
    assert not (tmp_path / "out").exists()


def test_folder_without_models_and_bad_job_counts_are_one_line_errors(tmp_path):
    assert_bad_input(run_cli("convert", tmp_path, "-o", tmp_path / "out"), "has no .onnx files")
    save(add_model(), tmp_path / "m.onnx")
    assert_bad_input(run_cli("convert", tmp_path / "m.onnx", "-j", "0"), "worker processes")


def test_help_says_per_model_options_apply_where_the_input_exists():
    text = " ".join(run_cli("convert", "--help").stdout.split())
    assert "applies to each model that has that input" in text
    assert "-j N" in text and "--quiet" in text


def _on_a_terminal(*args):
    """The CLI with stderr on a pseudo-terminal: what a person watching it sees there."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "converter", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=follower, text=True)
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:          # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    out = proc.communicate()[0]
    os.close(leader)
    return proc.returncode, out, seen.decode()


def test_batch_progress_on_a_terminal_and_quiet_silences_it(models, tmp_path):
    folder = tmp_path / "one"          # a folder of one model is a batch of one
    folder.mkdir()
    save(add_model(), folder / "m.onnx")
    args = ("convert", folder, "-o", tmp_path)
    code, out, shown = _on_a_terminal(*args)
    assert code == 0 and "converted 1 of 1 models" in out
    assert shown.startswith(f"convert: [1/1] {folder / 'm.onnx'}: ok (")
    code, out, shown = _on_a_terminal(*args, "--quiet")
    assert code == 0 and shown == ""


def test_convert_tells_its_stages():
    stages = []
    convert(add_model(), progress=stages.append)
    assert stages[0] == "loading"
    assert "lower onnx" in stages and stages[-1] == "insert split"


def test_slow_convert_shows_its_stages_with_the_convert_label():
    stream = io.StringIO()
    progress = Progress(after=0, stream=stream, label="convert")
    progress("loading")
    progress("writing")
    progress.done()
    assert [line.split(" (")[0] for line in stream.getvalue().splitlines()] == [
        "convert: loading", "convert: writing", "convert: done"]


def test_one_model_on_a_terminal_writes_only_its_usual_output(models, tmp_path):
    code, out, shown = _on_a_terminal("convert", models / "a_relu.onnx", "-o", tmp_path, "--json")
    assert code == 0 and shown == ""        # converted well under the 2 s a stage line waits for
    assert json.loads(out)["layers"] == 2


def test_a_worker_that_dies_fails_its_model_only(models, tmp_path, monkeypatch):
    convert_one = batch_convert.convert_one

    def dies_on_relu(model, options):       # workers are forked: they run this patched function
        if "relu" in model:
            os._exit(9)
        return convert_one(model, options)

    monkeypatch.setattr(batch_convert, "convert_one", dies_on_relu)
    rows = batch_convert.convert_many([str(models / "a_relu.onnx"), str(models / "folder" / "b_add.onnx")],
                                      batch_convert.Options(output_dir=str(tmp_path)), jobs=2)
    assert [r["status"] for r in rows] == ["error", "ok"]
    assert "worker process died (exit code 9" in rows[0]["error"]
    assert batch_convert.exit_code(rows) == 2


def test_pnnx_inputshape_applies_to_each_model_in_input_order(models, tmp_path):
    save(relu_model("x"), tmp_path / "relu_x.onnx")
    result = run_cli("convert", models / "a_relu.onnx", tmp_path / "relu_x.onnx", "-o", tmp_path / "out",
                     "inputshape=[1,2,7]", "--json")
    assert result.returncode == 0, result.stderr
    assert [r["inputs"][0]["onnx_shape"] for r in json.loads(result.stdout)] == [[1, 2, 7], [1, 2, 7]]
