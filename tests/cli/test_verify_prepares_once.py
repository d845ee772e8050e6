"""verify reads, checks and shape-infers the model once, and converts and runs that same proto."""
import numpy as np
from onnx import helper
from onnx_cases import make_model

from converter.onnx_side import loader as onnx_loader
from converter import verify


def test_verify_checks_and_infers_the_model_once(monkeypatch):
    calls = []
    check = onnx_loader._check
    monkeypatch.setattr(onnx_loader, "_check", lambda proto, where: calls.append(where) or check(proto, where))
    model = make_model([helper.make_node("Add", ["x", "b"], ["y"])], [("x", ["N", 3, 4])], [("y", ["N", 3, 4])],
                       [("b", np.arange(4, dtype=np.float32))])
    report = verify(model, input_shapes={"x": [1, 3, 4]}, backend="both")
    assert report.passed and report.inputs == {"x": [1, 3, 4]}
    assert len(calls) == 1
