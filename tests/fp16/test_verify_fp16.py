"""verify --precision fp16: small models where fp16 overflows or loses precision are named and
fail; a model fp16 holds passes; YOLOv8n as real ncnn and the interpreter's emulation give it."""
import json
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import helper

from converter import verify
from converter.verification.fp16 import tolerance
from onnx_cases import make_model

SHAPE = [1, 4, 8]


def scaled_model(up: float, down: float) -> onnx.ModelProto:
    """y = relu(x * up) * down: the product passes through a blob fp16 stores."""
    nodes = [helper.make_node("Mul", ["x", "up"], ["big"], name="scale_up"),
             helper.make_node("Relu", ["big"], ["r"], name="the_relu"),
             helper.make_node("Mul", ["r", "down"], ["y"], name="scale_down")]
    consts = [("up", np.array(up, np.float32)), ("down", np.array(down, np.float32))]
    return make_model(nodes, [("x", SHAPE)], [("y", SHAPE)], consts)


def cancelling_model() -> onnx.ModelProto:
    """y = relu(x + 1000) - 1000: fine in fp32, but fp16 spaces numbers near 1000 by 0.5."""
    nodes = [helper.make_node("Add", ["x", "offset"], ["shifted"], name="add_offset"),
             helper.make_node("Relu", ["shifted"], ["r"], name="the_relu"),
             helper.make_node("Sub", ["r", "offset"], ["y"], name="remove_offset")]
    return make_model(nodes, [("x", SHAPE)], [("y", SHAPE)], [("offset", np.array(1000.0, np.float32))])


@pytest.fixture(scope="module")
def overflow_report():
    return verify(scaled_model(1e6, 1e-6), backend="both", precision="fp16")


def test_overflow_is_named_and_fails(overflow_report):
    report = overflow_report
    assert not report.passed and report.precision == "fp16"
    interp = next(o for o in report.outputs if o.backend == "interp")
    assert not interp.passed
    overflow = [w for w in report.warnings if w.startswith("fp16 overflow")]
    assert len(overflow) == 1 and "scale_up" in overflow[0] and "use_fp16_storage" in overflow[0], report.warnings
    first = next(d for d in report.divergences if d.backend == "interp")
    assert first.onnx_node == "scale_up", first.describe()


def test_real_ncnn_on_x86_keeps_fp32_blobs(overflow_report):
    """Measured: the pip runtime on x86 computes BinaryOp in fp32 even with fp16 options on."""
    import platform
    if platform.machine() != "x86_64":
        pytest.skip("what ARM does is what the interpreter emulates")
    ncnn_out = next(o for o in overflow_report.outputs if o.backend == "ncnn")
    assert ncnn_out.passed and ncnn_out.max_abs < 1e-3
    assert any("keeps blobs in fp32" in w for w in overflow_report.warnings)


def test_precision_loss_is_named_and_fails():
    report = verify(cancelling_model(), backend="interp", precision="fp16")
    assert not report.passed
    out = report.outputs[0]
    assert out.rel_to_max > 0.05 and out.rel_to_max > tolerance(3)     # about 0.25 of max|ref| = 2
    lossy = [w for w in report.warnings if w.startswith("fp16 precision loss (interp)")]
    assert len(lossy) == 1 and "remove_offset" in lossy[0], report.warnings
    assert not any(w.startswith("fp16 overflow") for w in report.warnings)
    # in fp32 the same model passes: the loss is fp16's
    assert verify(cancelling_model(), backend="interp").passed


def test_a_model_fp16_holds_passes():
    report = verify(scaled_model(3.0, 0.5), backend="both", precision="fp16")
    assert report.passed, [d.describe() for d in report.divergences]
    interp = next(o for o in report.outputs if o.backend == "interp")
    assert 0 < interp.max_abs       # the emulation did round
    assert report.rtol == tolerance(3) and report.atol == 0.0


def test_cli_precision_option(tmp_path):
    path = tmp_path / "overflow.onnx"
    onnx.save(scaled_model(1e6, 1e-6), str(path))
    result = subprocess.run([sys.executable, "-m", "converter", "verify", str(path), "--precision", "fp16",
                             "--json"], capture_output=True, text=True)
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["precision"] == "fp16" and not report["passed"]
    assert any(w.startswith("fp16 overflow") for w in report["warnings"])
    bad = subprocess.run([sys.executable, "-m", "converter", "verify", str(path), "--precision", "fp8"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
