"""The Python API: convert an ONNX model, save it, run it in the interpreter."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
from onnx import numpy_helper

from passes import run_pipeline
from passes.fix_broadcast import fix_broadcast

from .example_sizes import example_shapes
from .index_ranges import index_limits, random_high
from .int_inputs import ncnn_dtype, output_dtype
from .interpreter import Plan
from .ir import Graph
from .layout import (held_as, 
    LAYOUTS,
    declared_inputs,
    read_sidecar,
    sidecar_bytes,
    sidecar_path,
    to_ncnn,
    to_onnx,
)
from .onnx_loader import load_onnx_and_proto
from .reader import read_ncnn
from .writer import NcnnNames, ncnn_names, save


@dataclass
class NcnnModel:
    """An ncnn graph (converted or read from files) with its blob names."""
    graph: Graph
    stats: dict = field(default_factory=dict)
    # for files read back: the io record written beside them (converter/layout.py), else None
    record: dict | None = None
    # execution plans and names, valid for one graph wiring version (see Graph.version)
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def _cached(self) -> dict:
        if self._cache.get("version") != self.graph.version:
            self._cache.clear()
            self._cache.update(version=self.graph.version, names=ncnn_names(self.graph), plans={})
        return self._cache

    @property
    def names(self) -> NcnnNames:
        return self._cached()["names"]

    def io(self) -> dict[str, list[dict]]:
        """Inputs and outputs: ONNX name, ncnn blob, shapes, the dropped batch axis, and the
        dtype ncnn takes or gives: 'int32' bits for an Embed's word indices, else 'float32'."""
        if self.record is not None:
            return self.record
        names = self.names.blob

        def entry(name: str, output: bool = False) -> dict:
            t = self.graph.tensors[name]
            onnx_shape = t.onnx_shape or t.shape
            batch_axis = t.batch_axis if t.onnx_shape is None else t.onnx_batch_axis
            return {"onnx": name, "ncnn": names[name],
                    "onnx_shape": None if onnx_shape is None else list(onnx_shape),
                    "ncnn_shape": None if t.shape is None else list(t.ncnn_shape),
                    "batch_axis": batch_axis,
                    "dtype": (output_dtype if output else ncnn_dtype)(self.graph, name)}
        return {"inputs": [entry(n) for n in self.graph.inputs],
                "outputs": [entry(n, output=True) for n in self.graph.outputs]}

    def save(self, param_path: str | os.PathLike, bin_path: str | os.PathLike, fp16: bool = False,
             extra: dict | None = None) -> None:
        """Write .param/.bin, the io sidecar beside them (`<param stem>.json`: what lets
        load_ncnn(...).run take ONNX-shaped arrays) and `extra` {path: bytes}, all or none."""
        files = {sidecar_path(param_path): sidecar_bytes(self.io()), **(extra or {})}
        save(self.graph, param_path, bin_path, fp16=fp16, extra=files)

    def run(self, feeds: dict[str, np.ndarray], outputs: list[str] | None = None,
            layout: str = "onnx") -> dict[str, np.ndarray]:
        """Run in the ncnn-semantics interpreter.

        Names are ONNX names or ncnn blob names (their sanitized form). With layout 'onnx'
        arrays go in and come out as the ONNX model takes and gives them (the batch axis
        ncnn drops is dropped and restored here); with 'ncnn' they are ncnn Mats in numpy
        order. The first run for a set of feeds and outputs compiles an execution plan that
        later runs reuse, until the graph's wiring changes.
        """
        if layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
        io = self.io()
        entries = {name: e for e in io["inputs"] + io["outputs"] for name in (e["onnx"], e["ncnn"])}
        blob = lambda k: entries[k]["ncnn"] if k in entries else k  # noqa: E731
        if outputs is None and self.record is not None and self.record["outputs"]:
            outputs = [e["ncnn"] for e in self.record["outputs"]]   # not blobs the file leaves unused
        feeds = {blob(k): to_ncnn(v, entries[k], layout) if k in entries else v for k, v in feeds.items()}
        result = self._run_ncnn_layout(feeds, None if outputs is None else [blob(o) for o in outputs])
        if layout == "ncnn":        # int32 bits an input passed through stay int32 (held_as)
            return {k: held_as(v, entries[k].get("dtype")) if k in entries else v for k, v in result.items()}
        # ONNX names and layout, as onnxruntime gives them
        return {entries[k]["onnx"] if k in entries else k: to_onnx(v, entries[k]) if k in entries else v
                for k, v in result.items()}

    def _run_ncnn_layout(self, feeds: dict[str, np.ndarray], outputs: list[str] | None) -> dict[str, np.ndarray]:
        cache = self._cached()
        if "to_tensor" not in cache:
            cache["to_tensor"] = {blob: tensor for tensor, blob in cache["names"].blob.items()}
            cache["to_tensor"].update({t: t for t in self.graph.tensors})
        to_tensor, to_blob = cache["to_tensor"], cache["names"].blob
        unknown = [k for k in feeds if k not in to_tensor]
        if unknown:
            raise KeyError(f"unknown input(s) {', '.join(unknown)}; the model's inputs are "
                           f"{', '.join(to_blob[i] for i in self.graph.inputs)}")
        unknown = [k for k in outputs or [] if k not in to_tensor]
        if unknown:
            raise KeyError(f"unknown blob(s) {', '.join(unknown)}")
        wanted = tuple(to_tensor[o] for o in outputs) if outputs is not None else None
        tensor_feeds = {to_tensor[k]: v for k, v in feeds.items()}
        key = (wanted, frozenset(tensor_feeds))
        plan = cache["plans"].get(key)
        if plan is None:
            plan = cache["plans"][key] = Plan(self.graph, None if wanted is None else list(wanted), tensor_feeds)
        return {to_blob.get(k, k): v for k, v in plan.run(tensor_feeds).items()}


def convert(model, input_shapes: dict[str, list[int]] | None = None,
            broadcast_fix: bool = True, input_values: dict[str, object] | None = None,
            progress: Callable[[str], None] | None = None) -> NcnnModel:
    """ONNX model (path or ModelProto) -> NcnnModel. Raises ConversionError with a one-line reason.

    `input_values` fixes graph inputs to constants (they are then no ncnn inputs): e.g. a sample
    rate the model branches on with If, so the branch taken is known when converting.
    `progress(stage)` is told each stage (loading, each pass) as it starts."""
    if progress is not None:
        progress("loading")
    graph, proto = load_onnx_and_proto(model, input_shapes, input_values)
    return convert_prepared(graph, proto, broadcast_fix, input_values, progress)


def convert_prepared(graph: Graph, proto, broadcast_fix: bool = True,
                     input_values: dict[str, object] | None = None,
                     progress: Callable[[str], None] | None = None) -> NcnnModel:
    """The conversion of a model already prepared (onnx_loader.prepare_model) and built into `graph`:
    verify prepares once and hands the same proto to onnxruntime."""
    examples = example_shapes(proto, graph)         # before the pipeline rewrites the inputs
    stats = run_pipeline(graph, skip=set() if broadcast_fix else {fix_broadcast}, progress=progress)
    stats["warnings"] = list(graph.warnings)
    stats["example_shapes"], stats["example_notes"] = examples
    limits = index_limits(proto)        # random integers the generated script draws stay inside tables
    stats["random_high"] = {name: random_high(limits, name) for name in graph.inputs}
    # the inputs input_values fixed, as the ONNX model still wants them fed (harness --check)
    stats["fixed_inputs"] = {t.name: (numpy_helper.to_array(t).tolist(), str(numpy_helper.to_array(t).dtype))
                             for t in proto.graph.initializer if t.name in (input_values or {})}
    return NcnnModel(graph, stats)


def load_ncnn(param_path: str | os.PathLike, bin_path: str | os.PathLike) -> NcnnModel:
    """Read existing .param/.bin files (from this or any converter) for the interpreter."""
    graph = read_ncnn(param_path, bin_path)
    return NcnnModel(graph, record=read_sidecar(param_path, set(graph.tensors)) or declared_inputs(graph))


def output_paths(model_path: str | os.PathLike, out_dir: str | os.PathLike | None) -> tuple[Path, Path]:
    model_path = Path(model_path)
    folder = Path(out_dir) if out_dir is not None else model_path.parent
    stem = model_path.stem
    return folder / f"{stem}.ncnn.param", folder / f"{stem}.ncnn.bin"
