"""verify's per-layer table as text, a self-contained HTML page (inline SVG chart) or a PNG.

Rows come from VerifyReport.layers, in graph order per backend. The chart plots each row's
max error relative to max|reference| on a log scale, so a user sees where numbers drift.
"""
from __future__ import annotations

import html
import math
from pathlib import Path

from .ir import ConversionError

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
    """Aligned lines per backend; '>>' marks the first diverging layer, '!' any other mismatch."""
    lines = []
    for backend in dict.fromkeys(r.backend for r in rows):
        mine = [r for r in rows if r.backend == backend]
        cells = [row_cells(r) for r in mine]
        widths = [max(len(c) for c in column) for column in zip(COLUMNS, *cells)]
        lines.append(f"  per-layer ({backend}):")
        lines.append("     " + "  ".join(h.ljust(w) for h, w in zip(COLUMNS, widths)).rstrip())
        for row, c in zip(mine, cells):
            mark = ">> " if row.first_divergence else ("!  " if not row.passed else "   ")
            text = "  ".join(v.ljust(w) for v, w in zip(c, widths)).rstrip()
            lines.append("  " + mark + text + (f"  ({row.error})" if row.error else ""))
    return lines


def _log_error(row) -> float:
    if row.error or row.rel_to_max is None:
        return LOG_CEIL
    if row.rel_to_max <= 0:
        return LOG_FLOOR
    return min(LOG_CEIL, max(LOG_FLOOR, math.log10(row.rel_to_max)))


def svg_chart(rows, width: int = 900, height: int = 320) -> str:
    """An inline SVG: relative error per layer (x: position in the graph, y: log10)."""
    left, right, top, bottom = 60, 20, 20, 40
    plot_w, plot_h = width - left - right, height - top - bottom
    count = max((sum(1 for r in rows if r.backend == b) for b in COLORS), default=1)
    x_of = lambda i: left + (plot_w * i / max(count - 1, 1))  # noqa: E731
    y_of = lambda v: top + plot_h * (LOG_CEIL - v) / (LOG_CEIL - LOG_FLOOR)  # noqa: E731
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'font-family="sans-serif" font-size="11">',
             f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#888"/>']
    for decade in range(int(LOG_FLOOR), int(LOG_CEIL) + 1, 2):
        y = y_of(decade)
        parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>'
                     f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">1e{decade}</text>')
    parts.append(f'<text x="{left + plot_w / 2}" y="{height - 8}" text-anchor="middle">'
                 f'layer (graph order)</text>')
    parts.append(f'<text x="14" y="{top + plot_h / 2}" transform="rotate(-90 14 {top + plot_h / 2})" '
                 f'text-anchor="middle">max error / max|ref|</text>')
    for backend, color in COLORS.items():
        mine = [r for r in rows if r.backend == backend]
        if not mine:
            continue
        points = " ".join(f"{x_of(i):.1f},{y_of(_log_error(r)):.1f}" for i, r in enumerate(mine))
        parts.append(f'<polyline points="{points}" fill="none" stroke="{color}" stroke-width="1.5"/>')
        for i, r in enumerate(mine):
            fill = "#d62728" if not r.passed else color
            radius = 6 if r.first_divergence else 2.5
            label = html.escape(f"{backend}: {r.layer} ({r.layer_type}) {_num(r.rel_to_max)}")
            parts.append(f'<circle cx="{x_of(i):.1f}" cy="{y_of(_log_error(r)):.1f}" r="{radius}" '
                         f'fill="{fill}"><title>{label}</title></circle>')
        parts.append(f'<text x="{left + plot_w - 4}" y="{top + 14 + 14 * list(COLORS).index(backend)}" '
                     f'text-anchor="end" fill="{color}">{backend}</text>')
    parts.append("</svg>")
    return "".join(parts)


def html_page(report, title: str) -> str:
    status = "PASSED" if report.passed else "FAILED"
    body = [f"<h1>{html.escape(title)}: {status}</h1>", svg_chart(report.layers)]
    for d in report.divergences:
        body.append(f"<p><b>{html.escape(d.describe())}</b></p>")
    body.append("<table><tr><th>backend</th><th></th>"
                + "".join(f"<th>{h}</th>" for h in COLUMNS) + "<th>error</th></tr>")
    for row in report.layers:
        mark = "first divergence" if row.first_divergence else ("mismatch" if not row.passed else "")
        style = ' class="bad"' if not row.passed else ""
        body.append(f"<tr{style}><td>{row.backend}</td><td>{mark}</td>"
                    + "".join(f"<td>{html.escape(c)}</td>" for c in row_cells(row))
                    + f"<td>{html.escape(row.error or '')}</td></tr>")
    body.append("</table>")
    css = ("body{font-family:sans-serif;margin:1em}table{border-collapse:collapse;font-size:12px}"
           "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}tr.bad{background:#fdd}")
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{css}</style></head><body>{''.join(body)}</body></html>\n")


def write_png(report, path: Path, title: str) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConversionError("--report FILE.png needs matplotlib (pip install matplotlib); "
                              "write FILE.html instead, which needs nothing") from None
    fig, ax = plt.subplots(figsize=(10, 4))
    for backend, color in COLORS.items():
        mine = [r for r in report.layers if r.backend == backend]
        ax.plot(range(len(mine)), [10 ** _log_error(r) for r in mine], color=color, label=backend)
        first = [i for i, r in enumerate(mine) if r.first_divergence]
        ax.scatter(first, [10 ** _log_error(mine[i]) for i in first], color="#d62728", zorder=3)
    ax.set_yscale("log")
    ax.set_xlabel("layer (graph order)")
    ax.set_ylabel("max error / max|ref|")
    ax.set_title(title)
    ax.legend()
    fig.savefig(path)
    plt.close(fig)


def write_report(report, path: str | Path, title: str) -> None:
    """Write FILE.html (self-contained) or FILE.png (needs matplotlib); ConversionError otherwise."""
    path = Path(path)
    suffix = path.suffix.lower()
    try:
        if suffix in (".html", ".htm"):
            path.write_text(html_page(report, title), encoding="utf-8")
        elif suffix == ".png":
            write_png(report, path, title)
        else:
            raise ConversionError(f"--report {path}: use a .html or .png file name")
    except OSError as exc:
        raise ConversionError(f"cannot write report {path}: {exc.strerror or exc}") from None
