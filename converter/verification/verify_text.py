"""verify's result as the lines the command prints: inputs and what the broadcast pass did, each
output's figures, quantized models' end-to-end drift tied to the per-layer figures, the table, PASSED/FAILED."""
from __future__ import annotations

from converter.verification.report import text_table


def verify_lines(report) -> list[str]:
    lines: list[str] = []
    shapes = ", ".join(f"{k} {v}" for k, v in report.inputs.items())
    lines.append(f"inputs: {shapes}; {broadcast_summary(report.broadcast_stats)}")
    for note in report.sizes:
        lines.append(f"  dynamic dims chosen: {note}; check the sizes you deploy with --input-shape or --input")
    if report.int8_fallbacks or report.int8_mode:
        lines.append(f"  {report.int8_layers or 0} layers run int8 ({report.int8_mode} mode); "
                     f"{len(report.int8_fallbacks)} quantized nodes in float"
                     + (f"; {len(report.int8_dropped)} activation Q/DQ pairs dropped" if report.int8_dropped else ""))
        for node, why in report.int8_fallbacks.items():
            lines.append(f"  float: {node}: {why}")
    for o in report.outputs:
        status = "ok  " if o.passed else "FAIL"
        of_max = "" if o.rel_to_max is None else f" ({o.rel_to_max:.3g} of max|ref|)"
        figures = o.error or f"max abs error {o.max_abs:.3g}{of_max}"
        lines.append(f"  {status} {o.backend:6} {o.name}: {figures}")
    for d in report.int8_distance:   # fast int8: distances from onnxruntime's int8 and float runs
        top1 = "" if d.top1_float is None else (f"; top-1 {'agrees' if d.top1_float else 'differs'} with float, "
                                                f"{'agrees' if d.top1_int8 else 'differs'} with onnxruntime int8")
        figures = d.error or (f"from float {d.from_float:.3g} (onnxruntime int8: {d.ort_int8_from_float:.3g}), "
                              f"from onnxruntime int8 {d.from_int8:.3g} (relative RMS){top1}")
        lines.append(f"  {'ok  ' if d.passed else 'FAIL'} {d.backend:6} {d.name}: {figures}")
    for o in report.end_to_end:      # quantized: the outputs from the inputs alone, steps added up
        lines.append(f"  end to end {o.backend:6} {o.name}: {o.error or f'max abs error {o.max_abs:.3g}'}")
    note = drift_note(report)
    lines += [f"  {note}"] if note else []
    lines += text_table(report.layers)
    for d in report.divergences:
        lines.append(f"  {d.describe()}")
    for warning in report.warnings:
        lines.append(f"warning: {warning}")
    lines.append("PASSED" if report.passed else "FAILED")
    return lines


def broadcast_summary(stats: dict) -> str:
    """What the broadcast pass changed: constants it laid out anew (MemoryData dims, no layer)
    and Reshape layers it inserted before computed operands."""
    relaid, inserted = stats.get("constants_relaid", 0), stats.get("reshapes_inserted", 0)
    if "broadcasts_left" in stats:      # verify --no-broadcast-fix
        left = stats["broadcasts_left"]
        if not left:
            return "broadcasts: not fixed (--no-broadcast-fix), and none needed fixing"
        named = ", ".join(left[:3]) + (", ..." if len(left) > 3 else "")
        return (f"broadcasts: not fixed (--no-broadcast-fix): {len(left)} elementwise layer(s) left to ncnn's "
                f"rule, which differs from numpy's there ({named}); a failure at them is expected")
    if not relaid and not inserted:
        return "broadcasts: nothing to fix (ncnn's rule already gives numpy's result)"
    return (f"broadcasts fixed: {relaid} constant(s) laid out anew, "
            f"{inserted} Reshape layer(s) inserted")


def drift_note(report) -> str | None:
    """For a quantized model whose end-to-end outputs differ: the sentence tying them to the 'ok' lines
    and the table, whose layers are each fed onnxruntime's values of their inputs (forced_layers.py)."""
    drifted = [o for o in report.end_to_end if o.error or (o.max_abs or 0) > 0]
    if not drifted:
        return None
    worst = max((o.max_abs for o in drifted if o.max_abs is not None), default=None)
    total = "an error" if worst is None else f"max abs error {worst:.3g}"
    fed = ("the 'ok' lines and the table feed each layer onnxruntime's values of its inputs, so a row shows only "
           "that layer's own rounding")
    first = next((d for d in report.divergences if d.blob is not None), None)
    if not report.passed and first is not None:
        return (f"why FAILED while outputs say ok: {fed}, and layer '{first.layer}' (>>) is beyond one quantizer "
                f"step even so; end to end (from the inputs alone) its error and the later layers' add up to {total}")
    return (f"why end to end differs while every layer is ok: {fed} (within one quantizer step); end to end each "
            f"layer is fed the previous layers' int8 results, and their one-step differences add up to {total} "
            f"(expected of int8: judge it on real data)")
