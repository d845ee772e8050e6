"""Every public broadcast case: convert, run in the REAL ncnn runtime, compare with onnxruntime."""
import json

import numpy as np
import pytest
from onnx import helper

from onnx_cases import ROOT, assert_matches_reference, make_model, run_converted_in_ncnn

CASES_FILE = ROOT / "tests" / "data" / "bcast_public.json"   # a copy of shared/cases, so CI needs only the checkout
CASES = json.loads(CASES_FILE.read_text())["cases"]


def case_model(case):
    op, a, b = case["op"], case["a"], case["b"]
    rng = np.random.default_rng(int(case["id"][1:]))
    low, high = (0.5, 2.0) if op in ("Div", "Pow") else (-2.0, 2.0)
    out_shape = list(np.broadcast_shapes(tuple(a), tuple(b)))
    operands = ["B", "A"] if case["b_first"] else ["A", "B"]
    node = helper.make_node(op, operands, ["C"])
    inputs, inits = [("A", a)], []
    if case["b_is_constant"]:
        inits.append(("B", rng.uniform(low, high, b).astype(np.float32)))
    else:
        inputs.append(("B", b))
    model = make_model([node], inputs, [("C", out_shape)], inits)
    feeds = {n: rng.uniform(low, high, s).astype(np.float32) for n, s in inputs}
    return model, feeds


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_public_case_in_real_ncnn(case, tmp_path):
    model, feeds = case_model(case)
    _, outputs = run_converted_in_ncnn(model, feeds, tmp_path)
    assert_matches_reference(model, feeds, outputs)
