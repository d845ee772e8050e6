"""Small hand-built ncnn Graphs and helpers shared by the reader tests."""
from __future__ import annotations

import numpy as np
import pytest

from converter.ir import Graph, Node, Tensor


def ncnn_graph(layers: list[tuple], inputs: list[str], outputs: list[str]) -> Graph:
    """A Graph from (type, name, inputs, outputs, params, weights) tuples, in order."""
    graph = Graph("hand")
    for type_, name, ins, outs, params, weights in layers:
        for blob in outs:
            graph.add_tensor(Tensor(blob, shape=None))
        graph.add_node(Node(name, type_, list(ins), list(outs), params=dict(params),
                            weights=[np.asarray(w, np.float32).ravel() for w in weights], ncnn=True))
    graph.inputs, graph.outputs = list(inputs), list(outputs)
    return graph


def conv_net(rng: np.random.Generator) -> Graph:
    """Input -> Convolution(bias, leaky relu) + MemoryData -> Convolution(no bias) -> Slice -> Reshape.

    The input is (c, h, w) = (3, 6, 8); the outputs, in file order, are 'tail' (2, 6, 8) and 'head' (2, 48).
    """
    w1 = rng.standard_normal(4 * 3 * 3 * 3)
    b1 = rng.standard_normal(4)
    const = rng.standard_normal(4 * 6 * 8)
    w2 = rng.standard_normal(4 * 4)
    return ncnn_graph([
        ("Input", "in0", [], ["data"], {0: 8, 1: 6, 2: 3}, []),
        ("Convolution", "conv1", ["data"], ["c1"],
         {0: 4, 1: 3, 4: 1, 5: 1, 6: 108, 9: 2, 10: (0.1,)}, [w1, b1]),
        ("MemoryData", "const", [], ["k"], {0: 8, 1: 6, 2: 4}, [const]),
        ("BinaryOp", "add", ["c1", "k"], ["sum"], {0: 0}, []),
        ("Convolution", "conv2", ["sum"], ["c2"], {0: 4, 1: 1, 6: 16}, [w2]),
        ("Slice", "slice", ["c2"], ["s0", "tail"], {0: (2, -233), 1: 0}, []),
        ("Reshape", "flat", ["s0"], ["head"], {0: 48, 1: 2}, []),
    ], inputs=["data"], outputs=["tail", "head"])


def odd_net(rng: np.random.Generator) -> Graph:
    """Odd weight counts (fp16 padding), InnerProduct, a quoted string param with a comma.

    The input is (5,); the output 'out' is (1, 3).
    """
    return ncnn_graph([
        ("Input", "in0", [], ["x"], {0: 5}, []),
        ("MemoryData", "m", [], ["k"], {0: 5}, [rng.standard_normal(5)]),
        ("BinaryOp", "mul", ["x", "k"], ["y"], {0: 2, 2: 3}, []),
        ("InnerProduct", "fc", ["y"], ["z"], {0: 3, 1: 1, 2: 15}, [rng.standard_normal(15),
                                                                   rng.standard_normal(3)]),
        ("Reshape", "r", ["z"], ["out"], {6: "0w,1"}, []),
    ], inputs=["x"], outputs=["out"])


GRAPHS = {"conv_net": conv_net, "odd_net": odd_net}


@pytest.fixture
def make_graph():
    """make_graph(name) -> a fresh copy of one of GRAPHS; every copy has the same weights."""
    return lambda name: GRAPHS[name](np.random.default_rng(7))
