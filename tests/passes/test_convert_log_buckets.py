"""convert_log_buckets: T5's log-scaled relative-position buckets (integer -> float Log chain ->
integer) become integer threshold counts; against onnxruntime in real ncnn and the interpreter at
every relative position up to 300 (T5's defaults put exact-arithmetic integers at 16, 32, 64, 128)."""
import math

import numpy as np
import pytest
from onnx import TensorProto, helper

from converter import convert
from converter.ncnn_side.layout import to_ncnn
from converter.ncnn_side.runtime import run_ncnn
from onnx_cases import assert_matches_reference, make_model
from passes.convert_log_buckets import thresholds

I64 = TensorProto.INT64


def bucket_model(buckets=32, distance=128, scale=None, second_log=False, shared=False):
    """transformers' T5 _relative_position_bucket, bidirectional, on relative positions `rel` (1, S)."""
    half = buckets // 2
    exact = half // 2
    scale = float(half - exact) if scale is None else scale
    c = lambda name, v, t=np.int64: (name, np.array(v, t))         # noqa: E731
    nodes = [helper.make_node("Greater", ["rel", "zero"], ["up"]),
             helper.make_node("Cast", ["up"], ["up_i"], to=I64),
             helper.make_node("Mul", ["up_i", "half"], ["offset"]),
             helper.make_node("Abs", ["rel"], ["n"]),
             helper.make_node("Less", ["n", "exact"], ["small"]),
             helper.make_node("Cast", ["n"], ["nf"], to=TensorProto.FLOAT),
             helper.make_node("Div", ["nf", "exact_f"], ["ratio"]),
             helper.make_node("Log", ["ratio"], ["log"]),
             *([helper.make_node("Log", ["log"], ["log2"])] if second_log else []),
             helper.make_node("Div", ["log2" if second_log else "log", "span"], ["part"]),
             helper.make_node("Mul", ["part", "scale"], ["steps"]),
             helper.make_node("Cast", ["steps"], ["steps_i"], to=I64),
             helper.make_node("Add", ["steps_i", "exact"], ["large"]),
             helper.make_node("Min", ["large", "top"], ["capped"]),
             helper.make_node("Where", ["small", "n", "capped"], ["inside"]),
             helper.make_node("Add", ["offset", "inside"], ["bucket"]),
             helper.make_node("Cast", ["bucket"], ["y"], to=TensorProto.FLOAT)]
    if shared:      # the float positions read elsewhere too: the chain is not the Cast's alone
        nodes += [helper.make_node("Cast", ["nf"], ["nf_copy"], to=TensorProto.FLOAT),
                  helper.make_node("Add", ["y", "nf_copy"], ["z"])]
    inits = [c("zero", 0), c("half", half), c("exact", exact), c("exact_f", float(exact), np.float32),
             c("span", math.log(distance / exact), np.float32), c("scale", scale, np.float32),
             c("top", half - 1)]
    return make_model(nodes, [("rel", [1, "S"], I64)], [("z" if shared else "y", None)], inits, opset=13)


def check_positions(model, tmp_path, lengths):
    """One converted file, at relative positions -(S//2) .. S - S//2 - 1, in real ncnn and the interpreter."""
    converted = convert(model)
    param, bin_ = tmp_path / "m.param", tmp_path / "m.bin"
    converted.save(param, bin_)
    io = converted.io()
    for s in lengths:
        feeds = {"rel": (np.arange(s) - s // 2).reshape(1, s).astype(np.int64)}
        ncnn_feeds = {e["ncnn"]: to_ncnn(feeds[e["onnx"]], e) for e in io["inputs"]}
        names = [e["ncnn"] for e in io["outputs"]]
        for got in (run_ncnn(param, bin_, ncnn_feeds, names), converted.run(ncnn_feeds, layout="ncnn")):
            assert_matches_reference(model, feeds, {e["onnx"]: got[e["ncnn"]] for e in io["outputs"]},
                                     rtol=0, atol=0)
    return converted


@pytest.mark.parametrize("buckets,distance", [(32, 128), (8, 16)])
def test_t5_buckets_match_at_every_position(buckets, distance, tmp_path):
    converted = check_positions(bucket_model(buckets, distance), tmp_path, [5, 33, 300])
    assert converted.stats["log_buckets_converted"] == 1


def test_thresholds_are_where_the_float_chain_steps():
    """T5's defaults: trunc(2 log2(n / 8)) from n = 1 (-6); truncation toward zero steps past each
    negative integer and onto each positive one; 16 and 32 reach 2 and 4 exactly in float32."""
    steps = [("Div", 8.0), ("Log", 0.0), ("Div", math.log(16)), ("Mul", 8.0)]
    g0, ts = thresholds(steps)
    assert (g0, ts[:11]) == (-6, [2, 2, 3, 3, 5, 6, 12, 16, 23, 32, 46])


@pytest.mark.parametrize("near_miss", ["decreasing", "two_logs", "shared"])
def test_near_misses_are_left_alone(near_miss):
    model = bucket_model(**{"decreasing": {"scale": -8.0}, "two_logs": {"second_log": True},
                            "shared": {"shared": True}}[near_miss])
    try:
        converted = convert(model)
    except Exception:       # the float chain may refuse on its own; the pass must not have fired
        return
    assert converted.stats["log_buckets_converted"] == 0
