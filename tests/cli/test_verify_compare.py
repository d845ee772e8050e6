"""verify's comparison of an output with onnxruntime's: non-finite values that agree are a match."""
import numpy as np
import pytest
from onnx import helper

from converter.verification.check import compare, verify
from onnx_cases import make_model

INF, NAN = np.inf, np.nan


@pytest.mark.parametrize("got, want, ok", [
    ([1.0, INF, -INF, NAN], [1.0, INF, -INF, NAN], True),
    ([1.0, INF], [1.0, -INF], False),
    ([1.0, INF], [1.0, NAN], False),
    ([1.0, 2.0], [1.0, INF], False),
    ([NAN, 2.0], [0.0, 2.0], False),
])
def test_non_finite_values(got, want, ok):
    passed, max_abs, _, _ = compare(np.array(got, np.float32), np.array(want, np.float32), 1e-3, 1e-4)
    assert passed == ok
    if ok:
        assert max_abs == 0.0


def test_division_by_a_zero_constant_verifies():
    """x / [0, 2]: onnxruntime and the converted model both give inf (or NaN for 0 / 0) in column 0."""
    model = make_model([helper.make_node("Div", ["x", "d"], ["y"])], [("x", [1, 3, 2])], [("y", [1, 3, 2])],
                       [("d", np.array([0.0, 2.0], np.float32))])
    report = verify(model)
    assert report.passed, [(o.name, o.max_abs, o.error) for o in report.outputs]
