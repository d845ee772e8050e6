"""A graph compiled once for many runs: the interpreter's execution plan.

Building a Plan does every per-layer decision that does not depend on the
data: which layers the wanted blobs need, their order, each layer's resolved
params and bound kernel, and after which step each blob can be dropped. Blobs
live in a flat list of slots, so a run is one tight loop of kernel calls.

A layer whose kernel cannot be bound (bad params or weights) does not fail
the build: its step raises when it runs, so the blobs computed before it are
still reported, exactly as when a kernel fails on its data.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from converter.ncnn_side.layers import SPECS

from ..ir import Graph, Node
from . import size_guard
from .blas_threads import blas_threads, choose_threads
from .buffers import BufferPool, exclusive, recycle
from .fp16_storage import fp16_weights, round_fp16, rounding_outputs
from .registry import KERNELS, InterpreterError

F32 = np.float32


def as_blob(value) -> np.ndarray:
    """A fed array as an ncnn Mat holds it: float32, except int32 whose bits are kept (ncnn's
    Embed reads its word indices as int32 bits; `ncnn.Mat(int32 array)` keeps them too)."""
    value = np.asarray(value)
    if value.dtype == np.int32:
        return np.ascontiguousarray(value).view(F32)
    return np.asarray(value, dtype=F32)


@dataclass(frozen=True)
class Step:
    node: Node
    call: Callable                 # call(*input arrays) -> array | tuple of arrays
    inputs: tuple[int, ...]        # slots read
    outputs: tuple[int, ...]       # slots written
    release: tuple[int, ...]       # slots no later step reads
    in_place: bool = False         # the kernel may write over its first input, which dies here


def default_outputs(graph: Graph, nodes: list[Node]) -> list[str]:
    """The graph outputs, else every blob no layer consumes."""
    if graph.outputs:
        return list(graph.outputs)
    consumed = {b for n in nodes for b in n.inputs}
    return [b for n in nodes for b in n.outputs if b not in consumed]


def _needed(nodes: list[Node], wanted: list[str], fed: set[str]) -> list[Node]:
    """The nodes the wanted blobs depend on, in order (ncnn too runs only what an extract
    needs); a node whose blobs are all fed needs nothing upstream."""
    blobs, keep = set(wanted), []
    for node in reversed(nodes):
        if any(b in blobs for b in node.outputs):
            keep.append(node)
            if not all(b in fed for b in node.outputs):
                blobs.update(node.inputs)
    return keep[::-1]


def _raising(error: Exception, final: bool = True) -> Callable:
    """A step that fails when it runs; a final error already names the layer."""
    error.final = final

    def call(*inputs):
        raise error
    return call


def _may_write_over_input(node: Node, inputs: tuple[int, ...], released: list[int]) -> bool:
    entry = KERNELS.get(node.op)
    return (entry is not None and entry.inplace and bool(inputs)
            and inputs[0] in released and inputs[0] not in inputs[1:])


def _bind(node: Node) -> Callable:
    entry = KERNELS.get(node.op)
    if entry is None:
        return _raising(InterpreterError(f"no interpreter kernel for ncnn layer type {node.op} "
                                         f"(layer '{node.name}')"))
    try:
        params = SPECS[node.op].resolve(node.params)
        return _guarded(node, params, entry.bind(params, node.weights, len(node.outputs)))
    except Exception as exc:     # reported when the layer runs, with the blobs computed before it
        return _raising(exc, final=False)


def _guarded(node: Node, params, call: Callable) -> Callable:
    """`call`, first checking that the layer's output fits the blob size cap (size_guard.py)."""
    if node.op not in size_guard.GUARDS:
        return call

    def checked(*inputs, **kwargs):
        size_guard.check(node, params, inputs)
        return call(*inputs, **kwargs)
    return checked


class Plan:
    """`Plan(graph, outputs, fed, keep).run(feeds)` computes `outputs` (default: the graph
    outputs, else every unconsumed blob) from feeds for exactly the blobs in `fed`.

    Only the layers the outputs depend on run. With keep=True every layer runs and
    every blob is returned, for per-layer comparison. With fp16=True blobs and tagged weights
    are rounded as ncnn's fp16 storage holds them (fp16_storage.py says what is emulated).
    """

    def __init__(self, graph: Graph, outputs: list[str] | None = None, fed=(), keep: bool = False,
                 fp16: bool = False):
        fed = set(fed)
        every = graph.topological()
        self.wanted = list(outputs) if outputs is not None else default_outputs(graph, every)
        produced = {b for n in every for b in n.outputs}
        unknown = [b for b in self.wanted if b not in produced and b not in fed]
        if unknown:
            raise InterpreterError(f"no layer produces blob(s) {', '.join(unknown)}")
        nodes = every if keep else _needed(every, self.wanted, fed)
        expected = [b for n in every if n.op == "Input" for b in n.outputs]
        missing = [b for n in nodes if n.op == "Input" for b in n.outputs if b not in fed]
        if missing:
            raise InterpreterError(f"no feed for input blob(s) {', '.join(missing)}; "
                                   f"the graph expects: {', '.join(expected)}")
        self.keep = keep
        self.pool = BufferPool()
        self.threads = choose_threads()      # once per plan: one plan, one answer (see blas_threads.py)
        self.slot: dict[str, int] = {}
        self.fed = fed
        self.fp16 = fp16
        planned: list[tuple] = []               # (node, call, input slots, output slots)
        available = set()
        for node in nodes:
            if node.outputs and all(b in fed for b in node.outputs):
                available.update(node.outputs)
                continue
            absent = [b for b in node.inputs if b not in available and b not in fed]
            if absent:
                planned.append((node, _raising(InterpreterError(
                    f"{node.op} layer '{node.name}' needs blob(s) {', '.join(absent)} that no layer produced")),
                    (), ()))
                continue
            available.update(node.outputs)
            call = rounding_outputs(_bind(fp16_weights(node))) if fp16 else _bind(node)
            planned.append((node, call, self._slots(node.inputs), self._slots(node.outputs)))
        for name in fed:
            self._slots([name])
        release = {} if keep else self._releases(planned)
        self.steps = [Step(node, call, ins, outs, tuple(release.get(i, ())),
                           in_place=_may_write_over_input(node, ins, release.get(i, ())))
                      for i, (node, call, ins, outs) in enumerate(planned)]

    def _slots(self, blobs: list[str]) -> tuple[int, ...]:
        return tuple(self.slot.setdefault(b, len(self.slot)) for b in blobs)

    def _releases(self, planned: list[tuple]) -> dict[int, list[int]]:
        """For each step, the slots to drop after it: those it last reads or writes, unless wanted."""
        last: dict[int, int] = {}
        for index, (_, _, ins, outs) in enumerate(planned):
            for s in ins + outs:
                last[s] = index
        kept = {self.slot[b] for b in self.wanted}
        release: dict[int, list[int]] = {}
        for s, index in last.items():
            if s not in kept:
                release.setdefault(index, []).append(s)
        return release

    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if set(feeds) != self.fed:
            raise InterpreterError(f"this plan was built for feeds {sorted(self.fed)}, got {sorted(feeds)}")
        slots: list = [None] * len(self.slot)
        for name, value in feeds.items():
            blob = as_blob(value)       # int32 word indices keep their bits; numbers take fp16's rounding
            slots[self.slot[name]] = round_fp16(blob) if self.fp16 and np.asarray(value).dtype != np.int32 else blob
        index = 0
        try:
            with self.pool, np.errstate(all="ignore"), blas_threads(self.threads):     # ncnn makes inf and NaN silently
                for index, step in enumerate(self.steps):
                    if step.in_place:
                        result = self._call_in_place(step, slots)
                    else:
                        result = step.call(*[slots[s] for s in step.inputs])
                    if len(step.outputs) == 1 and not isinstance(result, tuple):
                        slots[step.outputs[0]] = np.asarray(result, dtype=F32)
                    else:
                        self._store_many(step, result, slots)
                    result = None
                    for s in step.release:
                        self._release(slots, s)
        except Exception as exc:
            error = self._explain(exc, self.steps[index], slots)
            error.blobs = self._named(slots)    # what was computed before the failing layer, for verify
            raise error from exc
        if self.keep:
            return self._named(slots)
        return {b: slots[self.slot[b]] for b in self.wanted}

    @staticmethod
    def _call_in_place(step: Step, slots: list):
        """Run a step whose first input dies here, letting it write over that input when
        nothing else (another blob, a caller's reference, a view) can see its memory."""
        first, slots[step.inputs[0]] = slots[step.inputs[0]], None
        rest = [slots[s] for s in step.inputs[1:]]
        try:
            if exclusive(first):
                return step.call(first, *rest, out=first)
            return step.call(first, *rest)
        except Exception:
            slots[step.inputs[0]] = first       # for the error report
            raise

    @staticmethod
    def _release(slots: list, s: int) -> None:
        blob, slots[s] = slots[s], None
        recycle(blob)

    @staticmethod
    def _store_many(step: Step, result, slots: list) -> None:
        results = result if isinstance(result, tuple) else (result,)
        if len(results) != len(step.outputs):
            raise InterpreterError(f"{step.node.op} layer '{step.node.name}' computed {len(results)} "
                                   f"outputs but has {len(step.outputs)} top blobs")
        for s, r in zip(step.outputs, results):
            slots[s] = np.asarray(r, dtype=F32)

    def _explain(self, exc: Exception, step: Step, slots: list) -> InterpreterError:
        if getattr(exc, "final", False):
            return exc
        shapes = ", ".join(str(tuple(slots[s].shape)) for s in step.inputs if slots[s] is not None) or "none"
        return InterpreterError(f"{step.node.op} layer '{step.node.name}' (input shapes {shapes}): {exc}")

    def _named(self, slots: list) -> dict[str, np.ndarray]:
        return {b: slots[s] for b, s in self.slot.items() if slots[s] is not None}
