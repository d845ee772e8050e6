"""The hand-typed attribute defaults the lowerings dropped for `node.attrs[name]` are onnx's schema
defaults at every opset the loader keeps (13, its upgrade floor, to the newest onnx knows), so filling
them from the schema (converter/onnx_side/defaults.py) changes no conversion."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import defs

from converter.ir import Node
from converter.onnx_side.defaults import fill_defaults, schema_defaults
from converter.onnx_side.loader import MIN_OPSET

OPSETS = range(MIN_OPSET, defs.onnx_opset_version() + 1)

# (ops, attribute, the value the lowering used to type by hand)
REPLACED = [
    (("LeakyRelu",), "alpha", 0.01), (("HardSigmoid",), "alpha", 0.2), (("HardSigmoid",), "beta", 0.5),
    (("Elu", "Celu"), "alpha", 1.0), (("Selu",), "alpha", 1.67326319217681884765625),
    (("Selu",), "gamma", 1.05070102214813232421875), (("Gelu",), "approximate", "none"),
    (("Shrink",), "bias", 0.0), (("Shrink",), "lambd", 0.5),
    (("Conv", "ConvTranspose", "MaxPool", "AveragePool"), "auto_pad", "NOTSET"),
    (("Conv", "ConvTranspose"), "group", 1),
    (("MaxPool", "AveragePool"), "ceil_mode", 0), (("AveragePool",), "count_include_pad", 0),
    (("CumSum",), "exclusive", 0), (("CumSum",), "reverse", 0), (("DepthToSpace",), "mode", "DCR"),
    (("Gather", "GatherElements", "Split"), "axis", 0), (("GatherND",), "batch_dims", 0),
    (("Gemm",), "alpha", 1.0), (("Gemm",), "beta", 1.0), (("Gemm",), "transA", 0), (("Gemm",), "transB", 0),
    (("LayerNormalization", "RMSNormalization"), "epsilon", 1e-5),
    (("LayerNormalization", "LpNormalization", "Softmax", "LogSoftmax"), "axis", -1),
    (("LpNormalization",), "p", 2), (("MeanVarianceNormalization",), "axes", [0, 2, 3]),
    (("LRN",), "alpha", 1e-4), (("LRN",), "beta", 0.75), (("LRN",), "bias", 1.0),
    (("InstanceNormalization", "GroupNormalization", "BatchNormalization"), "epsilon", 1e-5),
    (("Pad",), "mode", "constant"), (("LSTM", "GRU", "RNN"), "direction", "forward"),
    (("LSTM",), "input_forget", 0), (("GRU",), "linear_before_reset", 0),
    (("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
      "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp", "ArgMax", "ArgMin"), "keepdims", 1),
    (("ArgMax", "ArgMin"), "axis", 0), (("ArgMax", "ArgMin"), "select_last_index", 0),
    (("Flatten",), "axis", 1), (("STFT",), "onesided", 1),
    (("GridSample",), "padding_mode", "zeros"), (("GridSample",), "align_corners", 0),
]


def _same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return np.float32(a) == np.float32(b)      # attributes are float32 on the wire
    return a == b


@pytest.mark.parametrize("ops, name, hand", REPLACED, ids=lambda v: v if isinstance(v, str) else None)
def test_schema_default_is_the_hand_value_at_every_kept_opset(ops, name, hand):
    for op in ops:
        assert any(_exists(op, opset) for opset in OPSETS), f"{op} is no ONNX op"
        for opset in OPSETS:
            if not schema_defaults(op, opset) and not _exists(op, opset):
                continue       # the op is newer than this opset: no model can hold it
            found = schema_defaults(op, opset)
            assert name in found and _same(found[name], hand), (op, opset, found.get(name), hand)


def _exists(op: str, opset: int) -> bool:
    try:
        defs.get_schema(op, opset, "")
    except defs.SchemaError:
        return False
    return True


def test_fill_keeps_given_attributes_and_skips_ncnn_layers():
    node = fill_defaults(Node("g", "Gemm", ["a", "b"], ["y"], {"transB": 1}), 13)
    assert node.attrs == {"transB": 1, "transA": 0, "alpha": np.float32(1.0), "beta": np.float32(1.0)}
    layer = fill_defaults(Node("c", "Concat", ["a"], ["y"], ncnn=True), 13)
    assert layer.attrs == {}
