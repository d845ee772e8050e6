"""fp16's verdict over verify's rows: depth-scaled tolerance, first divergence, failures kept."""
import numpy as np
from onnx import helper

from converter import convert
from converter.verification.fp16 import depths, judge, tolerance
from converter.verification.check import Divergence, LayerRow, OutputCheck, VerifyReport
from onnx_cases import make_model


def chain():
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="r1"), helper.make_node("Neg", ["a"], ["b"], name="n"),
             helper.make_node("Relu", ["b"], ["y"], name="r2")]
    return convert(make_model(nodes, [("x", [1, 4])], [("y", [1, 4])])).graph


def rows(graph, rels, backend="interp"):
    found = [(n, b) for n in graph.topological() if n.op != "Input" for b in n.outputs]
    return [LayerRow(backend, n.name, n.op, n.origin, b, [4], True, max_abs=r, rel_to_max=r)
            for (n, b), r in zip(found, rels)]


def test_depth_counts_layers_on_the_longest_chain():
    graph = chain()
    d = depths(graph)
    assert [d[b] for b in ("x", "a", "b", "y")] == [0, 1, 2, 3]


def test_first_row_past_its_depths_tolerance_diverges():
    graph = chain()
    report = VerifyReport(False, ["interp"], {}, outputs=[OutputCheck("y", "interp", True, 1.0, None, None, 1.0)],
                          layers=rows(graph, [0.5 * tolerance(1), 1.5 * tolerance(2), 0.0]))
    judge(report, graph, {"y": np.zeros(4, np.float32)})
    assert [r.passed for r in report.layers] == [True, False, True]
    assert [r.first_divergence for r in report.layers] == [False, True, False]
    assert not report.passed and report.divergences[0].blob == "b"


def test_a_layer_that_failed_stays_the_divergence():
    graph = chain()
    layers = rows(graph, [0.0])
    failed = next(n for n in graph.topological() if n.origin == "n")
    layers.append(LayerRow("ncnn", failed.name, failed.op, "n", failed.outputs[0], [], False, error="boom"))
    for r in layers:
        r.backend = "ncnn"
    report = VerifyReport(False, ["ncnn"], {}, outputs=[OutputCheck("y", "ncnn", False, error="not computed")],
                          layers=layers, divergences=[Divergence("ncnn", failed.name, failed.op, "n", None, error="boom")])
    judge(report, graph, {})
    assert len(report.divergences) == 1 and report.divergences[0].error == "boom"
    assert layers[-1].first_divergence and not report.passed
