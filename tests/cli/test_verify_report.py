"""verify's per-layer table (text, --json rows, --report FILE.html/.png) and its progress lines."""
import importlib.util
import io
import json
import re
import sys
import time

import onnx

import converter
from converter.cli import Progress
from onnx_cases import MODELS
from test_convert_cli import assert_bad_input, run_cli

BCAST = MODELS / "bcast_demo.onnx"
ROW_KEYS = {"backend", "layer", "layer_type", "onnx_node", "blob", "shape", "passed", "max_abs",
            "rel_to_max", "cosine", "nan", "inf", "first_divergence", "error",
            "from_float", "from_int8"}     # the last two: fast int8 only (converter/verification/int8_fast.py), else null


def test_table_marks_the_layer_the_divergence_line_names():
    result = run_cli("verify", BCAST, "--no-broadcast-fix", "--backend", "both")
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    named = re.findall(r"(\w+): first divergence at BinaryOp layer '([^']+)'", result.stdout)
    assert [b for b, _ in named] == ["interp", "ncnn"]
    marked = [line.split()[2] for line in lines if line.lstrip().startswith(">>")]     # after the row #
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


def _verify_must_not_run(*args, **kwargs):
    raise AssertionError("verify ran before the report path was checked")


def test_a_report_in_a_missing_folder_is_refused_before_verifying(tmp_path, monkeypatch, capsys):
    from converter.cli import main
    monkeypatch.setattr(sys.modules["converter.cli"], "verify", _verify_must_not_run)
    assert main(["verify", str(BCAST), "--report", str(tmp_path / "nope" / "r.html")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "does not exist" in err[0], err


def test_a_png_report_without_matplotlib_is_refused_before_verifying(tmp_path, monkeypatch, capsys):
    from converter.cli import main
    monkeypatch.setattr(sys.modules["converter.cli"], "verify", _verify_must_not_run)
    monkeypatch.setitem(sys.modules, "matplotlib", None)        # as on a machine without it
    assert main(["verify", str(BCAST), "--report", str(tmp_path / "r.png")]) == 2
    assert "needs matplotlib" in capsys.readouterr().err


def test_html_chart_has_an_index_axis_an_rtol_line_and_failing_rows_first(tmp_path):
    page = tmp_path / "report.html"
    result = run_cli("verify", BCAST, "--no-broadcast-fix", "--rtol", "0.01", "--json", "--report", page)
    assert result.returncode == 1, result.stderr
    text = page.read_text()
    rows = json.loads(result.stdout)["layers"]
    assert "layer # (the # column" in text and ">0</text>" in text
    assert "rtol 0.01" in text and "stroke-dasharray" in text
    table = text[text.index("<table>"):]
    cells = re.findall(r"<tr[^>]*><td>interp</td><td>(\d+)</td><td>([^<]*)</td><td>([^<]+)</td>", table)
    assert [c[2] for c in cells if c[1]] == [r["layer"] for r in rows if not r["passed"]]
    assert cells[0][1] == "first divergence"
    assert all(c[1] for c in cells[:sum(not r["passed"] for r in rows)])     # mismatches on top
    assert {int(c[0]) for c in cells} == set(range(len(rows)))


def test_exact_layers_are_not_drawn_at_the_floor():
    from converter.verification.report import svg_chart
    report = converter.verify(onnx.load(str(BCAST)))
    exact = [r for r in report.layers if r.rel_to_max == 0]
    assert exact                                  # this model has layers ncnn reproduces bit for bit
    svg = svg_chart(report.layers, report.rtol)
    assert svg.count("<circle") == len(report.layers) - len(exact)
    assert f"({len(exact)} exact, not drawn)" in svg
