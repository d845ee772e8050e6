"""verify's text says what its marks and figures mean (issue 24, items 7 and 8): a legend for the
table's marks, row numbers the report's chart refers to, what --no-broadcast-fix left unfixed, and
why a quantized model's outputs say ok while end to end they differ."""
import importlib.util
import math
import re

import numpy as np
import pytest

from converter.cli import main
from converter.ir import ConversionError
from converter.verification.check import LayerRow, VerifyReport, verify
from converter.verification.report import (
    MARKS_LEGEND, chart_series, chart_title, legend_label, segments, svg_chart, write_report)
from converter.verification.verify_text import drift_note
from onnx_cases import MODELS
from quantized_cases import qdq_chain_model, qdq_conv_chain

BCAST = MODELS / "bcast_demo.onnx"


def test_no_broadcast_fix_names_what_it_left_and_the_marks_have_a_legend(capsys):
    assert main(["verify", str(BCAST), "--no-broadcast-fix"]) == 1
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert "nothing to fix" not in first
    assert "not fixed (--no-broadcast-fix): 4 elementwise layer(s)" in first and "expected" in first
    diverged = out.split("first divergence at BinaryOp layer '")[1].split("'")[0]
    assert diverged in first                         # the layer it fails at is one it says it left
    assert MARKS_LEGEND in out
    rows = [line.split() for line in out.splitlines() if line.lstrip().startswith((">>", "!"))]
    assert [r[1] for r in rows] == [str(i) for i in range(len(rows))]      # the # the chart's x axis names


def test_a_passing_model_prints_no_marks_legend(capsys):
    assert main(["verify", str(MODELS / "cnn_small.onnx"), "--no-broadcast-fix"]) == 0
    out = capsys.readouterr().out
    assert "none needed fixing" in out and MARKS_LEGEND not in out


def test_quantized_ok_outputs_and_end_to_end_drift_are_tied():
    x = np.random.default_rng(4).normal(0, 1, (1, 4, 6, 6)).astype(np.float32)
    report = verify(qdq_conv_chain(), inputs={"x": x})
    assert report.passed and all(o.max_abs == 0 for o in report.outputs)
    assert report.end_to_end[0].max_abs > 0
    note = drift_note(report)
    assert note.startswith("why end to end differs while every layer is ok")
    assert f"{report.end_to_end[0].max_abs:.3g}" in note
    report.end_to_end[0].max_abs = 0.0          # no drift: nothing to explain
    assert drift_note(report) is None


def test_quantized_failure_with_ok_outputs_names_the_layer():
    """Inputs far beyond the calibrated range: the Conv's int8 input saturates at -128 in onnxruntime
    and -127 in ncnn, beyond a step, while the output layer, fed onnxruntime's values, is exact."""
    x = np.random.default_rng(4).normal(0, 10, (1, 4, 6, 7)).astype(np.float32)
    report = verify(qdq_chain_model(), inputs={"x": x})
    assert not report.passed and all(o.passed and o.max_abs == 0 for o in report.outputs)
    note = drift_note(report)
    assert note.startswith("why FAILED while outputs say ok") and f"'{report.divergences[0].layer}' (>>)" in note


def _row(i, rel, backend="interp", passed=True):
    return LayerRow(backend, f"l{i}", "Conv", None, f"b{i}", [1], passed, max_abs=rel, rel_to_max=rel)


def test_chart_breaks_its_line_at_exact_layers_and_lists_only_backends_that_ran():
    rows = [_row(0, 1e-5), _row(1, 2e-5), _row(2, 0.0), _row(3, 1e-4), _row(4, 0.5, passed=False)]
    series = chart_series(rows)
    assert list(series) == ["interp"]                # no ncnn in the legend when it did not run
    runs = segments(series["interp"])
    assert [[i for i, _, _ in run] for run in runs] == [[0, 1], [3, 4]]
    svg = svg_chart(rows, 1e-3)
    assert svg.count("<polyline") == 2 and "ncnn" not in svg
    assert legend_label("interp", series["interp"]) == "interp (1 exact, not drawn)"
    ticks = re.findall(r'<text x="[\d.]+" y="[\d.]+" text-anchor="middle">([^<]*)</text>', svg)
    assert all(t.isdigit() for t in ticks[:-1])      # integer layer numbers, then the axis label
    assert "# column of verify's per-layer table" in ticks[-1]
    assert chart_title("m.onnx", False) == "m.onnx: FAILED" and chart_title("m.onnx", True) == "m.onnx: PASSED"


def test_png_report_has_the_status_in_its_title(tmp_path, monkeypatch):
    rows = [_row(0, 1e-5), _row(1, 0.0), _row(2, 1e-4)]
    report = VerifyReport(True, ["interp"], {}, layers=rows, rtol=1e-3)
    if importlib.util.find_spec("matplotlib") is None:      # the test extra does not install it
        with pytest.raises(ConversionError, match="needs matplotlib"):
            write_report(report, tmp_path / "r.png", "verify m.onnx")
        return
    import matplotlib.figure
    drawn = []
    real_savefig = matplotlib.figure.Figure.savefig

    def savefig(fig, path, *args, **kwargs):     # the title and lines as drawn, then the real file
        ax = fig.axes[0]
        drawn.append((ax.get_title(), [line.get_label() for line in ax.get_lines()],
                      list(ax.get_lines()[0].get_ydata())))
        return real_savefig(fig, path, *args, **kwargs)
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", savefig)
    write_report(report, tmp_path / "r.png", "verify m.onnx")
    title, labels, ys = drawn[0]
    assert title == "verify m.onnx: PASSED" and labels[0] == "interp (1 exact, not drawn)"
    assert "ncnn" not in " ".join(labels) and math.isnan(ys[1])       # the line breaks at the exact layer
    assert (tmp_path / "r.png").read_bytes()[:4] == b"\x89PNG"
