"""verify's per-layer table (text, --json rows, --report FILE.html/.png) and its progress lines."""
import importlib.util
import io
import json
import re
import time

import onnx

import converter
from converter.cli import Progress
from onnx_cases import MODELS
from test_convert_cli import assert_bad_input, run_cli

BCAST = MODELS / "bcast_demo.onnx"
ROW_KEYS = {"backend", "layer", "layer_type", "onnx_node", "blob", "shape", "passed", "max_abs",
            "rel_to_max", "cosine", "nan", "inf", "first_divergence", "error"}


def test_table_marks_the_layer_the_divergence_line_names():
    result = run_cli("verify", BCAST, "--no-broadcast-fix", "--backend", "both")
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    named = re.findall(r"(\w+): first divergence at BinaryOp layer '([^']+)'", result.stdout)
    assert [b for b, _ in named] == ["interp", "ncnn"]
    marked = [line.split()[1] for line in lines if line.lstrip().startswith(">>")]
    assert marked == [layer for _, layer in named]
    assert marked[0].startswith("Add:")          # the per-width Add, as before the table existed


def test_json_rows_follow_the_graph_and_mark_one_first_divergence():
    result = run_cli("verify", BCAST, "--no-broadcast-fix", "--backend", "ncnn", "--json")
    report = json.loads(result.stdout)
    rows = report["layers"]
    assert rows and all(set(r) == ROW_KEYS for r in rows)
    assert [r["layer"] for r in rows if r["first_divergence"]] == [report["divergences"][0]["layer"]]
    graph = converter.convert(onnx.load(str(BCAST)), broadcast_fix=False).graph
    order = [n.name for n in graph.topological()]
    assert [r["layer"] for r in rows] == sorted((r["layer"] for r in rows), key=order.index)


def test_rows_of_a_passing_model_agree():
    report = converter.verify(onnx.load(str(MODELS / "cnn_small.onnx")))
    assert report.passed and len(report.layers) > 10
    for row in report.layers:
        assert row.passed and not row.first_divergence and row.nan == row.inf == 0
        assert row.cosine > 0.9999 and row.rel_to_max < 1e-4


def test_html_report_holds_every_row_and_a_chart(tmp_path):
    page = tmp_path / "report.html"
    result = run_cli("verify", BCAST, "--no-broadcast-fix", "--backend", "both", "--json", "--report", page)
    assert result.returncode == 1, result.stderr
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>") and "<svg" in text and "<polyline" in text
    for row in json.loads(result.stdout)["layers"]:
        assert f"<td>{row['layer']}</td>" in text
    assert "first divergence" in text
    assert "http" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")    # self-contained


def test_png_report_needs_matplotlib(tmp_path):
    result = run_cli("verify", BCAST, "--report", tmp_path / "r.png")
    if importlib.util.find_spec("matplotlib") is None:
        assert_bad_input(result, "needs matplotlib")
    else:
        assert result.returncode == 0 and (tmp_path / "r.png").read_bytes()[:4] == b"\x89PNG"


def test_report_with_another_suffix_is_bad_input(tmp_path):
    assert_bad_input(run_cli("verify", BCAST, "--report", tmp_path / "r.txt"), ".html or .png")


def test_progress_shows_a_long_stage_while_it_runs():
    stream = io.StringIO()
    progress = Progress(after=0.05, stream=stream)
    progress("running onnxruntime")
    time.sleep(0.3)                      # the stage has not ended, yet the user sees it
    assert stream.getvalue().startswith("verify: running onnxruntime")
    progress.done()


def test_progress_only_for_slow_runs():
    quiet, slow = io.StringIO(), io.StringIO()
    fast = Progress(after=60, stream=quiet)
    fast("converting")
    fast.done()
    assert quiet.getvalue() == ""
    shown = Progress(after=0, stream=slow)
    shown("converting")
    shown("running the interpreter")
    shown.done()
    assert [line.split(" (")[0] for line in slow.getvalue().splitlines()] == [
        "verify: converting", "verify: running the interpreter", "verify: done"]
