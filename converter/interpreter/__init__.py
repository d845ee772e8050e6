"""Run an ncnn Graph with numpy kernels that follow the real ncnn runtime's semantics.

`run` is a plain loop over the layers the requested outputs need, in
topological order: blobs that have a feed take it (every Input layer's blob
must have one), every other layer runs its kernel from `KERNELS`, and a blob is
dropped right after its last consumer unless `keep=True`. Where ncnn would compute garbage (out-of-range broadcasts,
mismatched shapes) a kernel raises instead, and the error names the layer.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from ..ncnn_layers import SPECS
from . import kernels  # noqa: F401  (registers every kernel)
from .registry import KERNELS, InterpreterError, kernel

__all__ = ["run", "InterpreterError", "KERNELS", "kernel"]


def _default_outputs(graph: Graph, nodes: list[Node]) -> list[str]:
    if graph.outputs:
        return list(graph.outputs)
    consumed = {b for n in nodes for b in n.inputs}
    return [b for n in nodes for b in n.outputs if b not in consumed]


def _needed(nodes: list[Node], wanted: list[str], feeds: dict) -> list[Node]:
    """The nodes the wanted blobs depend on, in order (ncnn too runs only what an extract
    needs); a node whose blobs are all fed needs nothing upstream."""
    blobs, keep = set(wanted), []
    for node in reversed(nodes):
        if any(b in blobs for b in node.outputs):
            keep.append(node)
            if not all(b in feeds for b in node.outputs):
                blobs.update(node.inputs)
    return keep[::-1]


def _last_uses(nodes: list[Node]) -> dict[int, list[str]]:
    """For each step, the blobs last used there (consumed, or produced and never consumed)."""
    last: dict[str, int] = {}
    for step, node in enumerate(nodes):
        for blob in node.inputs + node.outputs:
            last[blob] = step
    freed: dict[int, list[str]] = {}
    for blob, step in last.items():
        freed.setdefault(step, []).append(blob)
    return freed


def _run_node(node: Node, inputs: list[np.ndarray]) -> tuple[np.ndarray, ...]:
    entry = KERNELS.get(node.op)
    if entry is None:
        raise InterpreterError(f"no interpreter kernel for ncnn layer type {node.op} (layer '{node.name}')")
    extra = {"n_outputs": len(node.outputs)} if entry.wants_outputs else {}
    try:
        result = entry.fn(SPECS[node.op].resolve(node.params), node.weights, *inputs, **extra)
    except Exception as exc:
        shapes = ", ".join(str(tuple(x.shape)) for x in inputs) or "none"
        raise InterpreterError(f"{node.op} layer '{node.name}' (input shapes {shapes}): {exc}") from exc
    results = result if isinstance(result, tuple) else (result,)
    if len(results) != len(node.outputs):
        raise InterpreterError(f"{node.op} layer '{node.name}' computed {len(results)} outputs "
                               f"but has {len(node.outputs)} top blobs")
    return tuple(np.asarray(r, dtype=np.float32) for r in results)


def run(graph: Graph, feeds: dict[str, np.ndarray], outputs: list[str] | None = None,
        keep: bool = False) -> dict[str, np.ndarray]:
    """Compute `outputs` (default: the graph outputs, else every unconsumed blob).

    Only the layers those outputs depend on run. With keep=True every layer runs and
    every blob is returned, for per-layer comparison.
    """
    every = graph.topological()
    wanted = list(outputs) if outputs is not None else _default_outputs(graph, every)
    produced = {b for n in every for b in n.outputs}
    unknown = [b for b in wanted if b not in produced and b not in feeds]
    if unknown:
        raise InterpreterError(f"no layer produces blob(s) {', '.join(unknown)}")
    nodes = every if keep else _needed(every, wanted, feeds)
    expected = [b for n in every if n.op == "Input" for b in n.outputs]
    missing = [b for n in nodes if n.op == "Input" for b in n.outputs if b not in feeds]
    if missing:
        raise InterpreterError(f"no feed for input blob(s) {', '.join(missing)}; "
                               f"the graph expects: {', '.join(expected)}")

    env: dict[str, np.ndarray] = {}
    keep_set = set(wanted)
    freed = {} if keep else _last_uses(nodes)
    for step, node in enumerate(nodes):
        if node.outputs and all(b in feeds for b in node.outputs):
            for b in node.outputs:
                env[b] = np.asarray(feeds[b], dtype=np.float32)
        else:
            missing_inputs = [b for b in node.inputs if b not in env]
            if missing_inputs:
                raise InterpreterError(f"{node.op} layer '{node.name}' needs blob(s) "
                                       f"{', '.join(missing_inputs)} that no layer produced")
            try:
                env.update(zip(node.outputs, _run_node(node, [env[b] for b in node.inputs])))
            except InterpreterError as exc:
                exc.blobs = env       # what was computed before the failing layer, for verify
                raise
        for blob in freed.get(step, ()):
            if blob not in keep_set:
                env.pop(blob, None)
    if keep:
        return env
    return {b: env[b] for b in wanted}
