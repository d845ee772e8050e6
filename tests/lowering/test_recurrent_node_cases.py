"""onnx's own LSTM / GRU / RNN node test cases (onnx.backend.test.case.node), their expected
outputs against the real ncnn. Those cases feed W, R, B as graph inputs: they are fixed with
`input_values` (ncnn layers hold their weights). Cases ncnn cannot compute must be refused."""
import importlib

import numpy as np
import onnx.backend.test.case.node as node_cases
import pytest

from converter import convert
from converter.ir import ConversionError
from tests.onnx_cases import node_case_inputs, run_converted_in_ncnn

WEIGHTS = {"W", "R", "B", "P", "sequence_lens"}


def recurrent_cases() -> dict:
    """Importing a case module registers its cases (collect_testcases would build all ops': 12 s)."""
    for module in ("lstm", "gru", "rnn"):
        importlib.import_module(f"onnx.backend.test.case.node.{module}")
    return {c.name: c for c in node_cases._NodeTestCases
            if c.name.startswith(("test_lstm", "test_gru", "test_rnn", "test_simple_rnn"))}


CASES = recurrent_cases()
# what ncnn's layers do not compute, and the refusal that says so
REFUSED = {"test_lstm_with_peepholes": "peephole", **{n: "linear_before_reset=0" for n in CASES if "gru" in n}}


@pytest.mark.parametrize("name", sorted(n for n in CASES if n not in REFUSED))
def test_node_case_in_real_ncnn(tmp_path, name):
    case = CASES[name]
    feeds, args = node_case_inputs(case, lambda i, k: k in WEIGHTS)
    converted, got = run_converted_in_ncnn(case.model, feeds, tmp_path, **args)
    for entry, want in zip(converted.io()["outputs"], case.data_sets[0][1]):
        np.testing.assert_allclose(got[entry["onnx"]].reshape(want.shape), want, rtol=1e-3, atol=1e-4,
                                   err_msg=entry["onnx"])


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_node_case_refused(name):
    case = CASES[name]
    _, args = node_case_inputs(case, lambda i, k: k in WEIGHTS)
    with pytest.raises(ConversionError, match=REFUSED[name]):
        convert(case.model, **args)


def test_every_case_is_covered():
    assert len(CASES) == 18
