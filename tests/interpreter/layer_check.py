"""Build one-layer ncnn graphs and run them in the real ncnn and in the interpreter."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from converter.interpreter import run
from converter.ir import Graph, Node
from converter.ncnn_side.axes import reshape_params
from converter.ncnn_side.layers import SPECS
from converter.ncnn_side.runtime import run_ncnn
from converter.ncnn_side.writer import save


@dataclass
class Const:
    """A layer input held in a MemoryData layer instead of fed."""
    value: np.ndarray


def ids(op: str, **named) -> dict[int, object]:
    """Params by name -> params by id, for readable tests: ids("Pooling", kernel_w=3)."""
    by_name = {p.name: p.id for p in SPECS[op].params}
    return {by_name[name]: value for name, value in named.items()}


def one_layer_graph(op: str, params: dict, inputs: list, weights=(), n_outputs: int = 1) -> tuple[Graph, dict]:
    """Input (or MemoryData) layers feeding one `op` layer; returns the graph and its feeds."""
    graph, feeds, blobs = Graph(op), {}, []
    for i, item in enumerate(inputs):
        blob = f"in{i}"
        blobs.append(blob)
        if isinstance(item, Const):
            value = np.asarray(item.value, dtype=np.float32)
            graph.add_node(Node(f"const{i}", "MemoryData", [], [blob], params=reshape_params(value.shape),
                                weights=[value.ravel()], ncnn=True))
        else:
            graph.add_node(Node(f"input{i}", "Input", [], [blob], ncnn=True))
            graph.inputs.append(blob)
            feeds[blob] = np.asarray(item, dtype=np.float32)
    outs = [f"out{k}" for k in range(n_outputs)]
    graph.add_node(Node("layer", op, blobs, outs, params=dict(params),
                        weights=[np.asarray(w, dtype=np.float32).ravel() for w in weights], ncnn=True))
    graph.outputs = outs
    return graph, feeds


def run_real(tmp_path: Path, graph: Graph, feeds: dict) -> dict[str, np.ndarray]:
    param, bin_ = tmp_path / "layer.param", tmp_path / "layer.bin"
    save(graph, param, bin_)
    return run_ncnn(param, bin_, feeds, graph.outputs)


def check(tmp_path: Path, op: str, params: dict, inputs: list, weights=(), n_outputs: int = 1,
          rtol: float = 1e-4, atol: float = 1e-5, exact: bool = False) -> dict[str, np.ndarray]:
    """Assert the interpreter computes what the real ncnn computes; returns the interpreter's outputs.

    `atol` is taken relative to the largest magnitude in the real output (at least 1):
    layers that accumulate (ncnn's winograd and SIMD sums) round in proportion to it.
    """
    graph, feeds = one_layer_graph(op, params, inputs, weights, n_outputs)
    real = run_real(tmp_path, graph, feeds)
    ours = run(graph, feeds)
    for name in graph.outputs:
        assert ours[name].shape == real[name].shape, (name, ours[name].shape, real[name].shape)
        if exact:
            np.testing.assert_array_equal(ours[name], real[name], err_msg=name)
        else:
            finite = np.abs(real[name][np.isfinite(real[name])])   # an inf would make atol vacuous
            scale = max(1.0, float(np.max(finite, initial=0.0)))
            np.testing.assert_allclose(ours[name], real[name], rtol=rtol, atol=atol * scale, err_msg=name)
    return ours


def interpret(op: str, params: dict, inputs: list, weights=(), n_outputs: int = 1) -> dict[str, np.ndarray]:
    graph, feeds = one_layer_graph(op, params, inputs, weights, n_outputs)
    return run(graph, feeds)
