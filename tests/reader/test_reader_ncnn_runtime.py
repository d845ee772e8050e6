"""The files the round-trip tests read are valid ncnn: the real runtime loads and runs them.

Expected numbers come from numpy on the weights the reader returns, so this also checks that
the reader hands back each weight in the order and layout ncnn uses.
"""
import struct

import numpy as np
import pytest

from converter import load_ncnn
from converter.ncnn_side import runtime as ncnn_runtime
from converter.ncnn_side.layers import FP16_FLAG
from converter.ncnn_side.reader import read_ncnn
from converter.ncnn_side.writer import save


def conv3x3_same(x, w, b):
    c, h, wd = x.shape
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1)))
    patches = np.stack([padded[:, i:i + h, j:j + wd] for i in range(3) for j in range(3)], axis=1)
    return np.einsum("ock,ckhw->ohw", w.reshape(len(b), c, 9), patches) + b[:, None, None]


def conv_net_reference(graph, x):
    n = graph.nodes
    y = conv3x3_same(x, *n["conv1"].weights)
    y = np.where(y > 0, y, 0.1 * y) + n["const"].weights[0].reshape(4, 6, 8)
    y = np.einsum("oc,chw->ohw", n["conv2"].weights[0].reshape(4, 4), y)
    return {"tail": y[2:], "head": y[:2].reshape(2, 48)}


def odd_net_reference(graph, x):
    n = graph.nodes
    w, b = n["fc"].weights
    return {"out": (w.reshape(3, 5) @ (x * n["m"].weights[0]) + b).reshape(1, 3)}


@pytest.mark.parametrize("fp16", [False, True], ids=["fp32", "fp16"])
@pytest.mark.parametrize("name, feed, reference", [
    ("conv_net", "data", conv_net_reference),
    ("odd_net", "x", odd_net_reference),
])
def test_real_ncnn_runs_the_written_files(tmp_path, make_graph, name, feed, reference, fp16):
    graph = make_graph(name)
    param, bin_ = tmp_path / "m.param", tmp_path / "m.bin"
    save(graph, param, bin_, fp16=fp16)
    back = read_ncnn(param, bin_)
    x = np.random.default_rng(1).standard_normal({"data": (3, 6, 8), "x": (5,)}[feed]).astype(np.float32)
    want = reference(back, x.astype(np.float64))
    got = ncnn_runtime.run_ncnn(param, bin_, {feed: x}, back.outputs)
    for blob in back.outputs:
        np.testing.assert_allclose(got[blob], want[blob], rtol=1e-4, atol=1e-4, err_msg=blob)


@pytest.mark.parametrize("load_type, tag, dtype", [
    (1, None, "<f4"),              # the default: raw fp32, no tag
    (0, 0, "<f4"),                 # type tag 0: fp32
    (0, FP16_FLAG, "<f2"),         # fp16
], ids=["raw", "tagged-fp32", "tagged-fp16"])
def test_memorydata_load_type_reads_like_ncnn(tmp_path, load_type, tag, dtype):
    """MemoryData's 21=load_type 0 stores its data after a type tag, like conv weights."""
    values = np.linspace(-2, 3, 15).astype(dtype)
    param, bin_ = tmp_path / "m.param", tmp_path / "m.bin"
    param.write_text("7767517\n3 3\nInput in 0 1 x\nMemoryData m 0 1 c 0=5 1=3 21=%d\n"
                     "BinaryOp add 2 1 x c y 0=0\n" % load_type)
    data = values.tobytes()
    bin_.write_bytes((b"" if tag is None else struct.pack("<I", tag)) + data + b"\0" * (-len(data) % 4))
    x = np.random.default_rng(2).standard_normal((3, 5)).astype(np.float32)
    want = ncnn_runtime.run_ncnn(param, bin_, {"x": x}, ["y"])["y"]
    model = load_ncnn(param, bin_)
    np.testing.assert_array_equal(model.run({"x": x})["y"], want)
    np.testing.assert_array_equal(want, x + values.astype(np.float32).reshape(3, 5))
    save(model.graph, tmp_path / "b.param", tmp_path / "b.bin")       # written back with its tag, as fp32
    written = (tmp_path / "b.bin").read_bytes()
    assert written == (b"" if tag is None else struct.pack("<I", 0)) + values.astype("<f4").tobytes()
