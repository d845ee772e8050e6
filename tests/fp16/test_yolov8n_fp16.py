"""YOLOv8n verified in fp16, measured: the interpreter's fp16 storage emulation is off by about
1e-3 of max|ref| at the output (worst layer 7e-3, a Sigmoid), within fp16's tolerance; the real
ncnn on x86 with fp16 on gives its fp32 numbers (blobs stay fp32 there; no InnerProduct)."""
import platform

from converter import verify
from converter.verification.fp16 import LOSS
from scripts.fetch_models import fetch


def test_yolov8n_in_fp16():
    report = verify(fetch("yolov8n_320"), input_shapes={"images": [1, 3, 320, 320]}, backend="both",
                    precision="fp16")
    assert report.passed, [d.describe() for d in report.divergences]
    interp = next(o for o in report.outputs if o.backend == "interp")
    assert 1e-4 < interp.rel_to_max < 1e-2, interp
    rows = [r for r in report.layers if r.backend == "interp"]
    assert len(rows) > 150 and max(r.rel_to_max for r in rows) < LOSS
    assert not any(w.startswith(("fp16 overflow", "fp16 precision loss")) for w in report.warnings)
    if platform.machine() == "x86_64":
        real = next(o for o in report.outputs if o.backend == "ncnn")
        assert real.max_abs < 1e-3, real
