"""The buffer pool: released blob memory is reused, and never while anyone can still see it."""
import numpy as np
import pytest

from converter.interpreter import buffers, run
from converter.interpreter.buffers import BufferPool, empty, recycle
from converter.ir import Graph

from .layer_check import ids
from .test_run import add


@pytest.fixture(autouse=True)
def pool_every_size(monkeypatch):
    """These tests use small blobs; let the pool take them as it takes big ones."""
    monkeypatch.setattr(buffers, "POOL_MIN_FLOATS", 0)


def layer_chain(n_layers: int, op: str, params: dict, weights=(), stem: str = "b") -> Graph:
    """Input x, then n layers of one kind, each reading the last: blobs {stem}0..{stem}n-1."""
    g = Graph("chain")
    add(g, "data", "Input", [], ["x"])
    g.inputs = ["x"]
    blob = "x"
    for i in range(n_layers):
        add(g, f"{stem}{i}", op, [blob], [f"{stem}{i}"], dict(params), weights)
        blob = f"{stem}{i}"
    g.outputs = [blob]
    return g


def add_one_chain(n_layers: int) -> Graph:
    """BinaryOp +1 layers: each may run in place over the blob before it."""
    return layer_chain(n_layers, "BinaryOp", ids("BinaryOp", op_type=0, with_scalar=1, b=1.0))


def test_a_later_run_never_overwrites_earlier_results_or_feeds():
    from converter.interpreter import Plan
    graph = add_one_chain(6)
    plan = Plan(graph, None, ["x"])
    first_feed = np.zeros((4, 64, 64), np.float32)
    first = plan.run({"x": first_feed})["b5"]
    second = plan.run({"x": np.full((4, 64, 64), 10, np.float32)})["b5"]
    np.testing.assert_array_equal(first, 6)
    np.testing.assert_array_equal(second, 16)
    np.testing.assert_array_equal(first_feed, 0)


def conv_chain(n_layers: int) -> Graph:
    """1x1 convolutions: each writes fresh memory, so every intermediate is released."""
    return layer_chain(n_layers, "Convolution", ids("Convolution", num_output=4, kernel_w=1, weight_data_size=16),
                       [np.eye(4) * 0.5], stem="c")


def test_intermediate_memory_is_reused_across_runs():
    from converter.interpreter import Plan
    plan = Plan(conv_chain(6), None, ["x"])
    feeds = {"x": np.ones((4, 64, 64), np.float32)}
    plan.run(feeds)
    pooled = len(plan.pool._free)
    assert pooled >= 1                                  # intermediates came back
    for _ in range(3):
        np.testing.assert_array_equal(plan.run(feeds)["c5"], 0.5 ** 6)
        assert len(plan.pool._free) == pooled           # and the pool does not grow


def test_element_wise_chain_runs_in_one_buffer_and_leaves_the_feed_alone():
    from converter.interpreter import Plan
    plan = Plan(add_one_chain(6), None, ["x"])
    feed = np.zeros((4, 64, 64), np.float32)
    out = plan.run({"x": feed})["b5"]
    np.testing.assert_array_equal(out, 6)
    np.testing.assert_array_equal(feed, 0)
    assert not plan.pool._free                          # nothing released: every step wrote in place


def shared_blobs() -> Graph:
    """Blobs read twice (Split), read through views (Reshape), and graph outputs mid-chain:
    none may be written over while still visible."""
    g = Graph("shared")
    add(g, "data", "Input", [], ["x"])
    g.inputs = ["x"]
    add(g, "neg", "UnaryOp", ["x"], ["n"], ids("UnaryOp", op_type=1))
    add(g, "split", "Split", ["n"], ["n1", "n2"])
    add(g, "plus", "BinaryOp", ["n1"], ["p"], ids("BinaryOp", op_type=0, with_scalar=1, b=2.0))
    add(g, "flat", "Reshape", ["n2"], ["f"], ids("Reshape", w=-1))
    add(g, "relu", "ReLU", ["p"], ["r"])
    add(g, "times", "BinaryOp", ["r", "p2"], ["t"], ids("BinaryOp", op_type=2))
    add(g, "again", "Reshape", ["f"], ["p2"], ids("Reshape", w=8, h=8, c=4))
    add(g, "tanh", "TanH", ["t"], ["y"])
    add(g, "sig", "Sigmoid", ["p2"], ["z"])
    g.outputs = ["y", "z", "r"]
    return g


def test_writing_in_place_never_changes_a_result():
    """keep=True runs nothing in place and recycles nothing: it is the reference."""
    graph = shared_blobs()
    feed = np.random.default_rng(0).standard_normal((4, 8, 8)).astype(np.float32)
    reference = run(graph, {"x": feed.copy()}, keep=True)
    from converter.interpreter import Plan
    plan = Plan(graph, None, ["x"])
    for _ in range(3):
        got = plan.run({"x": feed.copy()})
        for name in ("y", "z", "r"):
            np.testing.assert_array_equal(got[name], reference[name], err_msg=name)


def pooled(array) -> bool:
    pool = BufferPool()
    with pool:
        recycle(array)
        return bool(pool._free)


def _read_only(n: int) -> np.ndarray:
    array = np.empty(n, np.float32)
    array.flags.writeable = False
    return array


# (results go to variables first: pytest's assertion rewriting keeps references to
#  the values inside an assert, which the pool rightly counts as holders)

def test_recycle_takes_only_memory_nothing_else_sees():
    temporary = pooled(np.empty(16, np.float32))              # only the call holds it
    held = np.empty(16, np.float32)
    while_held = pooled(held)                                 # this test's variable holds it too
    owner = np.empty(16, np.float32)
    view = owner[:8]
    owner_held = pooled(view)                                 # the owner is still held here
    del owner
    view_held = pooled(view)                                  # `view` is held here
    lone_view = pooled(np.empty(16, np.float32)[:8])          # a view nobody else sees: its owner goes
    wrong_dtype = pooled(np.empty(16, np.float64))
    read_only = pooled(_read_only(16))
    assert (temporary, lone_view) == (True, True)
    assert not any([while_held, owner_held, view_held, wrong_dtype, read_only])


def test_recycle_outside_a_running_plan_does_nothing():
    recycle(np.empty(4, np.float32))
    assert getattr(buffers._active, "pool", None) is None


def _address(array) -> int:
    return array.__array_interface__["data"][0]


def test_pool_serves_from_three_quarters_of_a_buffer_up_and_keeps_only_what_served():
    pool = BufferPool()
    with pool:
        first = empty((100,))
        address = _address(first)
        recycle(first)
        del first                                          # recycle's contract: the caller's last use
        fits = empty((75,))                                # 100 <= 75 * 4/3: served from the pool
        reused = _address(fits) == address
        recycle(fits)
        too_small = empty((74,))                           # 100 > 74 * 4/3: a fresh buffer
        fresh = _address(too_small) != address
        stranger = np.empty(50, np.float32)                # memory the pool never handed out
        recycle(stranger)
        pooled_during_run = len(pool._free)
    assert (reused, fresh, pooled_during_run) == (True, True, 2)
    assert [o.size for o in pool._free] == [100]           # only what served requests stays


def test_small_arrays_bypass_the_pool(monkeypatch):
    monkeypatch.setattr(buffers, "POOL_MIN_FLOATS", 1000)
    pool = BufferPool()
    with pool:
        small = np.empty(999, np.float32)                  # small: left to malloc
        recycle(small)
        small = empty((999,))
        recycle(small)
        view = np.empty(1000, np.float32)[:10]             # a small view of a big owner: the owner counts
        recycle(view)
        del view, small
        free_sizes = [o.size for o in pool._free]
        big = empty((1000,))                                # served by that owner
    assert free_sizes == [1000] and not pool._free and big.size == 1000


def test_threads_sharing_one_model_get_their_own_results():
    """NcnnModel keeps one plan (and pool) per feeds/outputs; concurrent runs must not mix."""
    import sys
    import threading

    from converter import convert
    from onnx_cases import MODELS
    model = convert(MODELS / "cnn_dynamic.onnx", input_shapes={"input": [1, 3, 24, 24]})
    rng = np.random.default_rng(3)
    feeds = [rng.standard_normal((3, 24, 24)).astype(np.float32) for _ in range(4)]
    expected = [run(model.graph, {"input": f}, keep=True)["logits"] for f in feeds]
    failures = []

    def worker(k):
        try:
            for _ in range(40):
                got = model.run({"input": feeds[k]}, layout="ncnn")["logits"]
                if not np.array_equal(got, expected[k]):
                    failures.append(f"thread {k}: wrong numbers")
        except Exception as exc:        # a mixed-up buffer can also surface as an error
            failures.append(f"thread {k}: {exc}")

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)                     # switch threads as often as possible
    try:
        threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert not failures


def test_one_model_run_at_changing_input_sizes():
    """Per-shape geometry caches and the pool follow the input size from run to run."""
    from converter import convert
    from onnx_cases import MODELS
    model = convert(MODELS / "cnn_dynamic.onnx")
    rng = np.random.default_rng(4)
    for h, w in [(16, 16), (24, 20), (32, 40), (16, 16), (33, 17)]:
        x = rng.standard_normal((3, h, w)).astype(np.float32)
        reference = run(model.graph, {"input": x}, keep=True)["logits"]
        np.testing.assert_array_equal(model.run({"input": x}, layout="ncnn")["logits"], reference)


IN_PLACE_LAYERS = [
    ("BatchNorm", {"channels": 4}, 4),
    ("HardSwish", {"alpha": 0.2, "beta": 0.5}, 0),
    ("Swish", {}, 0),
    ("Sigmoid", {}, 0),
]


@pytest.mark.parametrize("op,params,n_weights", IN_PLACE_LAYERS, ids=[c[0] for c in IN_PLACE_LAYERS])
def test_element_wise_layers_written_over_their_dead_input_match_ncnn(tmp_path, rng, op, params, n_weights):
    """Each layer reads a blob that dies there, so it writes its result over it (from the pool)."""
    from .layer_check import run_real
    graph = layer_chain(1, "UnaryOp", ids("UnaryOp", op_type=1), stem="neg")
    weights = [rng.uniform(0.5, 2, 4).astype(np.float32) for _ in range(n_weights)]
    add(graph, "layer", op, ["neg0"], ["y"], ids(op, **params), weights)
    graph.outputs = ["y"]
    feeds = {"x": (rng.standard_normal((4, 9, 10)) * 4).astype(np.float32)}
    real = run_real(tmp_path, graph, feeds)["y"]
    from converter.interpreter import Plan
    plan = Plan(graph, None, ["x"])
    assert plan.steps[-1].in_place
    for _ in range(2):
        np.testing.assert_allclose(plan.run(feeds)["y"], real, rtol=1e-5, atol=1e-6)
