"""The run loop: feeds, outputs, keep, errors; and a small multi-layer net against the real ncnn."""
import numpy as np
import pytest

from converter.interpreter import InterpreterError, run
from converter.ir import Graph, Node

from .layer_check import ids, run_real


def add(graph, name, op, inputs, outputs, params=None, weights=()):
    graph.add_node(Node(name, op, list(inputs), list(outputs), params=params or {},
                        weights=[np.asarray(w, np.float32).ravel() for w in weights], ncnn=True))


def small_net(rng) -> Graph:
    g = Graph("small")
    add(g, "data", "Input", [], ["data"])
    g.inputs = ["data"]
    conv_w, conv_b = rng.standard_normal(8 * 3 * 9) / 5, rng.standard_normal(8)
    add(g, "conv", "Convolution", ["data"], ["c1"],
        ids("Convolution", num_output=8, kernel_w=3, pad_left=1, bias_term=1, weight_data_size=8 * 27),
        [conv_w, conv_b])
    add(g, "relu", "ReLU", ["c1"], ["r1"])
    add(g, "split", "Split", ["r1"], ["r1a", "r1b"])
    add(g, "pool", "Pooling", ["r1a"], ["p1"], ids("Pooling", kernel_w=2, stride_w=2))
    add(g, "interp", "Interp", ["r1b"], ["i1"], ids("Interp", resize_type=2, height_scale=0.5, width_scale=0.5))
    add(g, "sum", "BinaryOp", ["p1", "i1"], ["s1"])
    add(g, "flat", "Reshape", ["s1"], ["f1"], ids("Reshape", w=-1, h=8))
    add(g, "fc", "InnerProduct", ["f1"], ["fc1"], ids("InnerProduct", num_output=10, weight_data_size=360),
        [rng.standard_normal(360) / 6])
    add(g, "prob", "Softmax", ["fc1"], ["prob"], ids("Softmax", axis=1, fixbug0=1))
    g.outputs = ["prob"]
    return g


def test_small_net_every_blob_matches_real_ncnn(tmp_path, rng):
    graph = small_net(rng)
    feeds = {"data": rng.standard_normal((3, 12, 12)).astype(np.float32)}
    blobs = [b for n in graph.topological() for b in n.outputs]     # extracted in order
    real = run_real(tmp_path, _with_outputs(graph, blobs), feeds)
    ours = run(graph, feeds, keep=True)
    assert set(ours) == set(blobs)
    for blob in blobs:
        scale = max(1.0, float(np.abs(real[blob]).max()))
        np.testing.assert_allclose(ours[blob], real[blob], rtol=1e-4, atol=1e-5 * scale, err_msg=blob)


def _with_outputs(graph, outputs):
    graph.outputs = list(outputs)
    return graph


def test_default_outputs_and_dropping_intermediates(rng):
    graph = small_net(rng)
    feeds = {"data": rng.standard_normal((3, 12, 12))}           # float64 feed: cast to float32
    out = run(graph, feeds)
    assert list(out) == ["prob"] and out["prob"].dtype == np.float32
    np.testing.assert_allclose(out["prob"].sum(axis=1), 1, rtol=1e-5)
    graph.outputs = []                                              # then: every unconsumed blob
    assert list(run(graph, feeds)) == ["prob"]
    assert set(run(graph, feeds, outputs=["p1", "c1"])) == {"p1", "c1"}


def test_missing_feed_names_the_expected_inputs(rng):
    with pytest.raises(InterpreterError, match="no feed for input blob.*data.*expects: data"):
        run(small_net(rng), {"image": np.zeros((3, 12, 12))})


def test_unknown_output_blob(rng):
    with pytest.raises(InterpreterError, match="no layer produces blob"):
        run(small_net(rng), {"data": np.zeros((3, 12, 12))}, outputs=["nope"])


def test_kernel_errors_name_layer_and_shapes(rng):
    with pytest.raises(InterpreterError, match=r"Convolution layer 'conv' \(input shapes \(4, 12, 12\)\)"):
        run(small_net(rng), {"data": np.zeros((4, 12, 12))})


def test_layer_without_kernel():
    g = Graph("g")
    add(g, "data", "Input", [], ["x"])
    add(g, "odd", "NoSuchLayer", ["x"], ["y"])
    with pytest.raises(InterpreterError, match="no interpreter kernel for ncnn layer type NoSuchLayer"):
        run(g, {"x": np.zeros(3)})


def test_feeding_an_intermediate_blob_skips_its_producer(rng):
    graph = small_net(rng)
    s1 = rng.standard_normal((8, 6, 6)).astype(np.float32)
    full = run(graph, {"data": np.zeros((3, 12, 12)), "s1": s1}, keep=True)
    np.testing.assert_array_equal(full["s1"], s1)


def test_blobs_are_released_after_their_last_consumer(monkeypatch):
    """A blob's memory is handed back once its last consumer ran (unless keep=True): the next
    layer that asks the pool for memory gets it, instead of a fresh allocation."""
    from converter.interpreter import buffers
    from converter.interpreter.buffers import empty
    from converter.interpreter.registry import KERNELS, Kernel
    from converter.ncnn_side.layers import SPECS, LayerSpec

    # these blobs are below the pool's size floor; without this the test measured malloc's reuse
    monkeypatch.setattr(buffers, "POOL_MIN_FLOATS", 0)

    addresses = {}

    def make(p, weights, x):
        out = empty(x.shape)
        np.add(x, 1, out=out)
        addresses["made"] = out.__array_interface__["data"][0]     # an int: holds no reference
        return out

    def probe(p, weights, x):
        fresh = empty(x.shape)
        addresses["probe"] = fresh.__array_interface__["data"][0]
        np.copyto(fresh, x)
        return fresh

    for name, fn in (("Make", make), ("Probe", probe)):
        monkeypatch.setitem(SPECS, name, LayerSpec(name))
        monkeypatch.setitem(KERNELS, name, Kernel(fn))
    g = Graph("g")
    add(g, "data", "Input", [], ["x"])
    add(g, "make", "Make", ["x"], ["a"])
    add(g, "pool", "Pooling", ["a"], ["b"], ids("Pooling", kernel_w=1))   # last reader of a
    add(g, "probe", "Probe", ["b"], ["c"])
    # big enough for the pool (smaller arrays bypass it, and their addresses depend on malloc)
    feeds = {"x": np.zeros((4, 128, 128), np.float32)}
    out = run(g, feeds)
    assert addresses["probe"] == addresses["made"]
    np.testing.assert_array_equal(out["c"], 1)
    run(g, feeds, keep=True)
    assert addresses["probe"] != addresses["made"]


def test_only_layers_the_outputs_need_run(rng):
    graph = small_net(rng)
    add(graph, "broken", "Reshape", ["r1b"], ["never"], ids("Reshape", w=7, h=7))   # would raise if run
    out = run(graph, {"data": np.zeros((3, 12, 12))}, outputs=["prob"])
    assert list(out) == ["prob"]
    with pytest.raises(InterpreterError, match="Reshape layer 'broken'"):
        run(graph, {"data": np.zeros((3, 12, 12))}, outputs=["never"])
    # a fed blob cuts its producers off: no data needed for the layers behind s1
    out = run(graph, {"s1": np.ones((8, 6, 6))}, outputs=["prob"])
    assert out["prob"].shape == (8, 10)
