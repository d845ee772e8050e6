"""converter/rewrite/driver.py: one walk over the anchors, matches applied as found, misses told
through the onnx2ncnn.fusions logger only when asked; and the reasons three ported passes give."""
import io
import logging
import math

import numpy as np
from onnx import helper

from onnx_cases import make_model
from converter.cli import main
from converter.ir import Graph, Node, Tensor
from converter.onnx_side.loader import load_onnx
from converter.rewrite.driver import LOG, Match, Miss, apply, explained, need, rule
from passes.fuse_gelu import fuse_gelu
from passes.fuse_hardswish import fuse_hardswish
from passes.fuse_layernorm import fuse_layernorm


def _chain(*ops: str) -> Graph:
    """x -> op0 -> op1 -> ... -> y, one float32 (4,) tensor between each."""
    graph = Graph()
    names = ["x"] + [f"t{i}" for i in range(len(ops) - 1)] + ["y"]
    for name in names:
        graph.add_tensor(Tensor(name, (4,), np.dtype(np.float32)))
    graph.inputs, graph.outputs = ["x"], ["y"]
    for i, op in enumerate(ops):
        graph.add_node(Node(f"n{i}", op, [names[i]], [names[i + 1]]))
    graph.add_tensor(Tensor("unused", (4,), np.dtype(np.float32), np.zeros(4, np.float32)))
    return graph


def _neg_then_relu(graph: Graph, neg: Node) -> Match:
    """Neg -> Relu becomes one Tanh (nonsense, but a visible rewrite): a Neg read by anything else misses."""
    readers = graph.consumers(neg.outputs[0])
    need(len(readers) == 1, "read more than once")
    if readers[0].op != "Relu":
        return Miss(f"its reader is a {readers[0].op}, not a Relu")
    return Match([neg, readers[0]], x=neg.inputs[0], y=readers[0].outputs[0], name=neg.name)


def _build(graph: Graph, m: Match) -> list[Node]:
    return [Node(f"{m.name}_fused", "Tanh", [m.x], [m.y])]


RULE = rule("neg_relu", "neg_relu_fused", "Neg", _neg_then_relu, _build)


def test_walk_applies_each_match_counts_and_says_why_the_others_missed():
    graph = _chain("Neg", "Relu", "Neg", "Sigmoid", "Neg", "Relu", "Abs")
    calls = []
    counted = rule("neg_relu", "neg_relu_fused", "Neg", lambda g, n: calls.append(n.name) or _neg_then_relu(g, n),
                   _build)
    out = io.StringIO()
    with explained(out):
        stats = apply(graph, counted)
    assert stats == {"neg_relu_fused": 2}
    assert calls == ["n0", "n2", "n4"]                  # each anchor matched once, in graph order, no rescan
    assert [n.op for n in graph.topological()] == ["Tanh", "Neg", "Sigmoid", "Tanh", "Abs"]
    assert "unused" not in graph.tensors and "t0" not in graph.tensors      # one cleanup after the walk
    assert out.getvalue().splitlines() == ["neg_relu: fired 2 times, 1 anchor missed",
                                           "  Neg 'n2': its reader is a Sigmoid, not a Relu"]


def test_quiet_by_default_and_the_logger_restored_after_explaining():
    assert not LOG.isEnabledFor(logging.INFO)
    with explained(io.StringIO()):
        assert LOG.isEnabledFor(logging.DEBUG)
    assert not LOG.isEnabledFor(logging.INFO) and not LOG.handlers
    graph = _chain("Neg", "Abs")
    assert apply(graph, RULE) == {"neg_relu_fused": 0}
    assert "unused" in graph.tensors                    # nothing fired: nothing cleaned


def test_a_raised_miss_a_removed_anchor_and_a_lowered_anchor_are_skipped():
    graph = _chain("Neg", "Neg", "Relu")
    graph.nodes["n0"].ncnn = True                       # an ncnn layer is no ONNX anchor
    removed = []

    def match(g: Graph, neg: Node):
        if neg.name == "n1":
            raise Miss("raised from a helper")
        return Match([])

    out = io.StringIO()
    with explained(out):
        apply(graph, rule("r", "r", "Neg", match, lambda g, m: removed.append(1)))
    assert out.getvalue().splitlines()[1:] == ["  Neg 'n1': raised from a helper"]
    # an anchor a rewrite removed earlier in the walk is not matched again
    graph = _chain("Neg", "Relu")
    seen = []
    two = rule("r", "r", ("Relu", "Neg"), lambda g, n: seen.append(n.op) or _neg_then_relu(g, n) if n.op == "Neg"
               else seen.append(n.op) or Miss("no"), _build)
    assert apply(graph, two) == {"r": 1} and seen == ["Neg"]


def _gelu(half: float) -> Graph:
    nodes = [helper.make_node("Div", ["x", "sqrt2"], ["s"]), helper.make_node("Erf", ["s"], ["e"], name="erf"),
             helper.make_node("Add", ["e", "one"], ["t"]), helper.make_node("Mul", ["x", "t"], ["xt"]),
             helper.make_node("Mul", ["xt", "half"], ["y"])]
    inits = [("sqrt2", np.float32(math.sqrt(2))), ("one", np.float32(1)), ("half", np.float32(half))]
    return load_onnx(make_model(nodes, [("x", [1, 8])], [("y", None)], inits))


def _explain(fuse, graph: Graph) -> str:
    out = io.StringIO()
    with explained(out):
        fuse(graph)
    return out.getvalue()


def test_near_misses_say_which_part_differs():
    assert _explain(fuse_gelu, _gelu(0.5)) == "fuse_gelu: fired 1 time\n"
    assert _explain(fuse_gelu, _gelu(0.6)).splitlines() == [
        "fuse_gelu: fired 0 times, 1 anchor missed", "  Erf 'erf': the last Mul's other operand is 0.6, not 0.5"]
    clip = [helper.make_node("Add", ["x", "three"], ["a"]), helper.make_node("Clip", ["a", "zero", "six"], ["c"],
                                                                              name="clip"),
            helper.make_node("Mul", ["x", "c"], ["m"]), helper.make_node("Div", ["m", "six"], ["y"])]
    inits = [("three", np.float32(3)), ("zero", np.float32(0)), ("six", np.float32(5))]
    graph = load_onnx(make_model(clip, [("x", [1, 8])], [("y", None)], inits))
    assert "  Clip 'clip': the Clip's bounds are 0.0, 5.0, not 0, 6" in _explain(fuse_hardswish, graph)
    # layer norm whose eps is added after the square root: the tail is named
    norm = [helper.make_node("ReduceMean", ["x"], ["m"], axes=[-1], name="mean"), helper.make_node("Sub", ["x", "m"], ["d"]),
            helper.make_node("Mul", ["d", "d"], ["sq"]), helper.make_node("ReduceMean", ["sq"], ["v"], axes=[-1], name="var"),
            helper.make_node("Sqrt", ["v"], ["sd"]), helper.make_node("Add", ["sd", "eps"], ["se"]),
            helper.make_node("Div", ["d", "se"], ["y"])]
    graph = load_onnx(make_model(norm, [("x", [1, 4, 8])], [("y", None)], [("eps", np.float32(1e-5))]))
    assert _explain(fuse_layernorm, graph).splitlines() == [
        "fuse_layernorm: fired 0 times, 2 anchors missed",
        "  ReduceMean 'mean': the variance is not (x - mean) / sqrt(variance + eps), eps a constant",
        "  ReduceMean 'var': the mean is not read by one Sub(x, mean) only"]


def test_convert_explain_fusions_prints_on_stderr_only_when_asked(tmp_path, capsys):
    import onnx
    path = tmp_path / "gelu.onnx"
    nodes = [helper.make_node("Div", ["x", "sqrt2"], ["s"]), helper.make_node("Erf", ["s"], ["e"], name="erf"),
             helper.make_node("Add", ["e", "one"], ["t"]), helper.make_node("Mul", ["x", "t"], ["xt"]),
             helper.make_node("Mul", ["xt", "half"], ["y"])]
    onnx.save(make_model(nodes, [("x", [1, 8])], [("y", None)], [("sqrt2", np.float32(math.sqrt(2))),
                         ("one", np.float32(1)), ("half", np.float32(0.7))]), path)
    assert main(["convert", str(path), "-o", str(tmp_path)]) == 0
    assert "fuse_gelu" not in capsys.readouterr().err
    assert main(["convert", str(path), "-o", str(tmp_path), "--explain-fusions"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert "fuse_gelu: fired 0 times, 1 anchor missed" in err
    assert "  Erf 'erf': the last Mul's other operand is 0.7, not 0.5" in err
    assert "fuse_attention: fired 0 times" in err
