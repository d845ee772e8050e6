"""verify's per-layer table as text, a self-contained HTML page (inline SVG chart) or a PNG.

Rows come from VerifyReport.layers, in graph order per backend. The chart plots each row's
max error relative to max|reference| on a log scale, so a user sees where numbers drift.
"""
from __future__ import annotations

import html
import math
import os
from pathlib import Path

from converter.ir import ConversionError

COLUMNS = ("layer", "type", "ONNX node", "shape", "max abs", "rel to max", "cosine", "NaN", "Inf")
LOG_FLOOR, LOG_CEIL = -9.0, 1.0       # the chart's y range, in decades of relative error
COLORS = {"interp": "#1f77b4", "ncnn": "#ff7f0e"}


def _num(value, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}g}"


def row_cells(row) -> list[str]:
    """The COLUMNS as text; a row whose blob could not be compared shows "-" figures."""
    shape = "x".join(map(str, row.shape)) or "-"
    return [row.layer, row.layer_type, row.onnx_node or "-", shape, _num(row.max_abs),
            _num(row.rel_to_max), _num(row.cosine, 6), str(row.nan), str(row.inf)]


def text_table(rows) -> list[str]:
    """Aligned lines per backend, each row numbered as the report's chart numbers it; '>>' marks
    the first diverging layer, '!' any other mismatch, and a legend says so when a mark is shown."""
    lines = []
    for backend in dict.fromkeys(r.backend for r in rows):
        mine = [r for r in rows if r.backend == backend]
        cells = [[str(i), *row_cells(r)] for i, r in enumerate(mine)]
        widths = [max(len(c) for c in column) for column in zip(("#", *COLUMNS), *cells)]
        lines.append(f"  per-layer ({backend}):")
        lines.append("     " + "  ".join(h.ljust(w) for h, w in zip(("#", *COLUMNS), widths)).rstrip())
        for row, c in zip(mine, cells):
            mark = ">> " if row.first_divergence else ("!  " if not row.passed else "   ")
            text = "  ".join(v.ljust(w) for v, w in zip(c, widths)).rstrip()
            lines.append("  " + mark + text + (f"  ({row.error})" if row.error else ""))
    if any(not r.passed for r in rows):
        lines.append("  " + MARKS_LEGEND)
    return lines


MARKS_LEGEND = ("marks: '>>' the first layer whose output is beyond the tolerance; '!' a later one (often it "
                "only carries the first one's error on); unmarked rows are within it")


def _log_error(row) -> float | None:
    """The row's height on the chart; None for an exact match (log 0 has no place on a log axis)."""
    if row.error or row.rel_to_max is None:
        return LOG_CEIL
    if row.rel_to_max <= 0:
        return None
    return min(LOG_CEIL, max(LOG_FLOOR, math.log10(row.rel_to_max)))


def _tick_step(count: int, most: int = 12) -> int:
    """A round step (1, 2, 5, 10, 20, ...) that puts at most `most` index ticks on the x axis."""
    step = 1
    while count / step > most:
        step = step * 5 // 2 if str(step)[0] == "2" else step * 2
    return step


X_LABEL = "layer # (the # column of verify's per-layer table; hover a point for its name)"


def chart_series(rows) -> dict[str, list[tuple[int, object, float | None]]]:
    """Per backend that has rows: (the row's # in the table, row, height or None when exact)."""
    series: dict[str, list] = {}
    for row in rows:
        mine = series.setdefault(row.backend, [])
        mine.append((len(mine), row, _log_error(row)))
    return {b: series[b] for b in COLORS if b in series}


def segments(points) -> list[list]:
    """The drawn points in runs of consecutive rows: a line never joins across an exact layer
    it leaves out (the error there is 0, not somewhere between its neighbours)."""
    runs: list[list] = [[]]
    for point in points:
        if point[2] is None:
            runs.append([])
        else:
            runs[-1].append(point)
    return [run for run in runs if run]


def legend_label(backend: str, points) -> str:
    exact = sum(v is None for _, _, v in points)
    return backend + (f" ({exact} exact, not drawn)" if exact else "")


def chart_title(title: str, passed: bool) -> str:
    return f"{title}: {'PASSED' if passed else 'FAILED'}"


def svg_chart(rows, rtol: float | None = None, width: int = 900, height: int = 330) -> str:
    """An inline SVG: relative error per layer (x: the row's # in the table, y: log10). Exact
    matches are not drawn (they are counted in the legend); a dashed line marks rtol."""
    left, right, top, bottom = 60, 20, 20, 50
    plot_w, plot_h = width - left - right, height - top - bottom
    series = chart_series(rows)
    count = max((len(points) for points in series.values()), default=1)
    x_of = lambda i: left + (plot_w * i / max(count - 1, 1))  # noqa: E731
    y_of = lambda v: top + plot_h * (LOG_CEIL - v) / (LOG_CEIL - LOG_FLOOR)  # noqa: E731
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'font-family="sans-serif" font-size="11">',
             f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#888"/>']
    for decade in range(int(LOG_FLOOR), int(LOG_CEIL) + 1, 2):
        y = y_of(decade)
        parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>'
                     f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">1e{decade}</text>')
    for i in range(0, count, _tick_step(count)):
        x = x_of(i)
        parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top + plot_h}" y2="{top + plot_h + 4}" '
                     f'stroke="#888"/><text x="{x:.1f}" y="{top + plot_h + 16}" text-anchor="middle">{i}</text>')
    if rtol:
        y = y_of(min(LOG_CEIL, max(LOG_FLOOR, math.log10(rtol))))
        parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#d62728" '
                     f'stroke-dasharray="6,4"/><text x="{left + 4}" y="{y - 4:.1f}" fill="#d62728">'
                     f'rtol {rtol:g}</text>')
    parts.append(f'<text x="{left + plot_w / 2}" y="{height - 8}" text-anchor="middle">{X_LABEL}</text>')
    parts.append(f'<text x="14" y="{top + plot_h / 2}" transform="rotate(-90 14 {top + plot_h / 2})" '
                 f'text-anchor="middle">max error / max|ref|</text>')
    for place, (backend, points) in enumerate(series.items()):
        color = COLORS[backend]
        for run in segments(points):
            line = " ".join(f"{x_of(i):.1f},{y_of(v):.1f}" for i, _, v in run)
            parts.append(f'<polyline points="{line}" fill="none" stroke="{color}" stroke-width="1.5"/>')
        for i, r, v in (p for p in points if p[2] is not None):
            fill = "#d62728" if not r.passed else color
            radius = 6 if r.first_divergence else 2.5
            label = html.escape(f"#{i} {backend}: {r.layer} ({r.layer_type}) {_num(r.rel_to_max)}")
            parts.append(f'<circle cx="{x_of(i):.1f}" cy="{y_of(v):.1f}" r="{radius}" '
                         f'fill="{fill}"><title>{label}</title></circle>')
        parts.append(f'<text x="{left + plot_w - 4}" y="{top + 14 + 14 * place}" text-anchor="end" '
                     f'fill="{color}">{html.escape(legend_label(backend, points))}</text>')
    parts.append("</svg>")
    return "".join(parts)


def failing_first(rows) -> list[tuple[int, object]]:
    """(# in graph order per backend, row), the first divergences first, then other mismatches,
    then the rows that pass, each group in graph order."""
    numbered, seen = [], {}
    for row in rows:
        numbered.append((seen.get(row.backend, 0), row))
        seen[row.backend] = seen.get(row.backend, 0) + 1
    return sorted(numbered, key=lambda nr: 0 if nr[1].first_divergence else 1 if not nr[1].passed else 2)


def html_page(report, title: str) -> str:
    body = [f"<h1>{html.escape(chart_title(title, report.passed))}</h1>", svg_chart(report.layers, report.rtol)]
    for d in report.divergences:
        body.append(f"<p><b>{html.escape(d.describe())}</b></p>")
    body.append("<table><tr><th>backend</th><th>#</th><th></th>"
                + "".join(f"<th>{h}</th>" for h in COLUMNS) + "<th>error</th></tr>")
    for index, row in failing_first(report.layers):
        mark = "first divergence" if row.first_divergence else ("mismatch" if not row.passed else "")
        style = ' class="bad"' if not row.passed else ""
        body.append(f"<tr{style}><td>{row.backend}</td><td>{index}</td><td>{mark}</td>"
                    + "".join(f"<td>{html.escape(c)}</td>" for c in row_cells(row))
                    + f"<td>{html.escape(row.error or '')}</td></tr>")
    body.append("</table>")
    css = ("body{font-family:sans-serif;margin:1em}table{border-collapse:collapse;font-size:12px}"
           "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}tr.bad{background:#fdd}")
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{css}</style></head><body>{''.join(body)}</body></html>\n")


def _matplotlib_pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConversionError("--report FILE.png needs matplotlib (pip install matplotlib); "
                              "write FILE.html instead, which needs nothing") from None
    return plt


def write_png(report, path: Path, title: str) -> None:
    plt = _matplotlib_pyplot()
    from matplotlib.ticker import MaxNLocator
    fig, ax = plt.subplots(figsize=(10, 4))
    for backend, points in chart_series(report.layers).items():
        # NaN at an exact layer breaks the line there, as the HTML chart's separate polylines do
        ax.plot([i for i, _, _ in points], [math.nan if v is None else 10 ** v for _, _, v in points],
                color=COLORS[backend], marker=".", label=legend_label(backend, points))
        first = [(i, v) for i, r, v in points if v is not None and r.first_divergence]
        ax.scatter([i for i, _ in first], [10 ** v for _, v in first], color="#d62728", zorder=3)
    rtol = report.rtol
    if rtol:
        ax.axhline(rtol, color="#d62728", linestyle="--", label=f"rtol {rtol:g}")
    ax.set_yscale("log")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))     # layer numbers, never 2.5
    ax.set_xlabel(X_LABEL.split(";")[0] + ")")
    ax.set_ylabel("max error / max|ref|")
    ax.set_title(chart_title(title, report.passed))
    ax.legend()
    fig.savefig(path)
    plt.close(fig)


def check_report_path(path: str | Path) -> None:
    """Refuse a report that could not be written before verify spends minutes on the model."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".html", ".htm", ".png"):
        raise ConversionError(f"--report {path}: use a .html or .png file name")
    folder = path.parent
    if not folder.is_dir():
        raise ConversionError(f"--report {path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise ConversionError(f"--report {path}: folder {folder} is not writable")
    if path.is_dir():
        raise ConversionError(f"--report {path}: is a folder")
    if suffix == ".png":
        _matplotlib_pyplot()


def write_report(report, path: str | Path, title: str) -> None:
    """Write FILE.html (self-contained) or FILE.png (needs matplotlib); ConversionError otherwise."""
    path = Path(path)
    check_report_path(path)
    try:
        if path.suffix.lower() == ".png":
            write_png(report, path, title)
        else:
            path.write_text(html_page(report, title), encoding="utf-8")
    except OSError as exc:
        raise ConversionError(f"cannot write report {path}: {exc.strerror or exc}") from None

