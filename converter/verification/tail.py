"""verify with a host tail (converter/onnx_side/host_tail.py): each backend's ncnn outputs run through the tail, and
the whole model's outputs compared with onnxruntime's, beside the per-blob check of the ncnn part."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort

from converter.onnx_side.host_tail import HostTail, rows_in_other_order
from converter.ncnn_side.layout import to_onnx


def whole_model_reference(proto: onnx.ModelProto, feeds: dict) -> dict[str, np.ndarray]:
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    wanted = {i.name for i in session.get_inputs()}
    return dict(zip(names, session.run(names, {k: v for k, v in feeds.items() if k in wanted})))


def tail_checks(tail: HostTail, entries: list[dict], reference: dict, feeds: dict, backend: str, blobs: dict,
                error, rtol: float, atol: float, compare, warnings: list[str]) -> list[dict]:
    """One check (verification.OutputCheck's fields) per model output, named `<backend>+tail`: ncnn's
    outputs (`blobs`, ncnn layout, of the files' output `entries`) through the tail, against `reference`."""
    if error is not None or any(e["onnx"] not in blobs for e in entries):
        return [dict(name=name, backend=f"{backend}+tail", passed=False, error="ncnn's part failed")
                for name in tail.outputs]
    head = {e["onnx"]: to_onnx(np.asarray(blobs[e["onnx"]]), e) for e in entries}
    final = tail.run(feeds, head)
    checks = []
    for name in tail.outputs:
        got, want = np.asarray(final[name]), reference[name]
        ok, max_abs, max_rel, why = compare(got, want, rtol, atol)
        moved = None if ok or why else rows_in_other_order(got, want, atol, rtol)
        if moved:
            ok = True
            warnings.append(f"{backend}+tail output '{name}': {moved} rows in another order than onnxruntime's, "
                            f"each matching one of its rows within the tolerance (the tail's TopK orders "
                            f"near-equal scores by their last bits, which ncnn's rounding moves)")
        peak = float(np.max(np.abs(want), initial=0.0)) if want.dtype.kind == "f" else 0.0
        rel = max_abs / peak if peak > 0 and np.isfinite(max_abs) else None
        checks.append(dict(name=name, backend=f"{backend}+tail", passed=ok, max_abs=max_abs, max_rel=max_rel,
                           error=why, rel_to_max=rel))
    return checks
