"""BLAS threads while a plan runs: the free cores, chosen once per plan, or ONNX2NCNN_BLAS_THREADS."""
import numpy as np
import pytest
from threadpoolctl import threadpool_info

from converter.interpreter import blas_threads as bt
from converter.interpreter.plan import Plan
from converter.ir import Graph, Node


def _blas_threads() -> set[int]:
    return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}


@pytest.mark.parametrize("setting,expected", [("1", 1), ("2", 2), ("0", 0)])
def test_setting_wins(monkeypatch, setting, expected):
    monkeypatch.setenv(bt.ENV, setting)
    assert bt.choose_threads() == expected


@pytest.mark.parametrize("others,cores,expected", [(0, 2, 2), (1, 2, 1), (5, 2, 1), (1, 8, 7), (None, 8, 1)])
def test_free_cores_without_a_setting(monkeypatch, others, cores, expected):
    monkeypatch.delenv(bt.ENV, raising=False)
    monkeypatch.setattr(bt, "_others_running", lambda: others)
    monkeypatch.setattr(bt.os, "cpu_count", lambda: cores)
    assert bt.choose_threads() == expected


def test_others_running_reads_proc():
    assert isinstance(bt._others_running(), int)


@pytest.mark.parametrize("threads", [1, 2])
def test_limit_inside_a_run(threads):
    with bt.blas_threads(threads):
        assert _blas_threads() == {threads}


def test_zero_leaves_blas_alone():
    before = _blas_threads()
    with bt.blas_threads(0):
        assert _blas_threads() == before


def test_a_plan_keeps_the_count_it_chose(monkeypatch):
    monkeypatch.setenv(bt.ENV, "1")
    graph = Graph("g")
    graph.add_node(Node("in", "Input", [], ["x"], ncnn=True))
    graph.add_node(Node("abs", "UnaryOp", ["x"], ["y"], params={0: 0}, ncnn=True))
    graph.inputs, graph.outputs = ["x"], ["y"]
    plan = Plan(graph, ["y"], {"x"})
    monkeypatch.setenv(bt.ENV, "2")
    assert plan.threads == 1
    np.testing.assert_array_equal(plan.run({"x": -np.ones(3, np.float32)})["y"], np.ones(3, np.float32))
