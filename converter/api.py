"""The Python API: convert an ONNX model, save it, run it in the interpreter."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import onnx
from onnx import numpy_helper

from converter.ncnn_side.bin_size import model_weight_bytes
from converter.ncnn_side.layout import (
    LAYOUTS,
    PERM_KEY,
    declared_inputs,
    held_as,
    read_sidecar,
    sidecar_bytes,
    sidecar_path,
    to_ncnn,
    to_onnx,
)
from converter.ncnn_side.reader import read_ncnn
from converter.ncnn_side.release_sizes import NeedsFixedSizes, fit_release
from converter.ncnn_side.release_target import skipped_passes
from converter.ncnn_side.releases import NEWEST
from converter.ncnn_side.writer import NcnnNames, ncnn_names, save
from converter.onnx_side.cut import CutRefusal, cut_hint, plan_cut, subgraph
from converter.onnx_side.host_tail import HostTail, tail_path
from converter.onnx_side.loader import graph_of_prepared, prepare_model
from converter.onnx_side.merged_decoder import BRANCH_INPUT, PHASES, branch_input, pair_paths, pair_record
from converter.shapes.decoder_layout import cache_pairs
from converter.shapes.example_sizes import example_shapes
from converter.shapes.index_limits import index_limits, random_high
from converter.shapes.int_inputs import ncnn_dtype, output_dtype
from passes import PIPELINE, run_pipeline
from passes.fix_broadcast import fix_broadcast, left_unfixed

from .interpreter import Plan
from .ir import ConversionError, Graph
from .lowering.genai_matmulnbits import BLOCK_QUANT_MODES


@dataclass
class NcnnModel:
    """An ncnn graph (converted or read from files) with its blob names."""
    graph: Graph
    stats: dict = field(default_factory=dict)
    # for files read back: the io record written beside them (converter/ncnn_side/layout.py), else None
    record: dict | None = None
    # what runs after ncnn on the host (converter/onnx_side/host_tail.py), or None
    tail: HostTail | None = None
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
                    "dtype": (output_dtype if output else ncnn_dtype)(self.graph, name),
                    # an NHWC input taken channels-first (passes/move_input_layout.py)
                    **({PERM_KEY: list(t.onnx_perm)} if t.onnx_perm else {})}
        release = {"ncnn_min_version": self.stats["ncnn_min_version"]} if "ncnn_min_version" in self.stats else {}
        pair = {"pair": self.stats["pair"]} if "pair" in self.stats else {}    # a merged decoder's file
        return {"inputs": [entry(n) for n in self.graph.inputs],
                "outputs": [entry(n, output=True) for n in self.graph.outputs], **release, **pair}

    def save(self, param_path: str | os.PathLike, bin_path: str | os.PathLike, fp16: bool = False,
             extra: dict | None = None) -> None:
        """Write .param/.bin, the io sidecar beside them (`<param stem>.json`: what lets
        load_ncnn(...).run take ONNX-shaped arrays) and `extra` {path: bytes}, all or none."""
        io = self.io()
        if self.tail is not None:       # the host tail beside the files, named in the record
            tail_file = tail_path(param_path)
            io = {**io, "tail": self.tail.record(tail_file.name)}
            extra = {**(extra or {}), tail_file: self.tail.model.SerializeToString()}
        files = {sidecar_path(param_path): sidecar_bytes(io), **(extra or {})}
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
        if self.tail is not None and outputs is None and layout == "onnx":     # ncnn, then the host tail
            names = {n for e in self.io()["inputs"] for n in (e["onnx"], e["ncnn"])}
            head = self.run({k: v for k, v in feeds.items() if k in names}, [e["ncnn"] for e in self.io()["outputs"]])
            return self.tail.run(feeds, head)
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


INT8_MODES = ("exact", "fast")


def convert(model, input_shapes: dict[str, list[int]] | None = None,
            broadcast_fix: bool = True, input_values: dict[str, object] | None = None,
            progress: Callable[[str], None] | None = None, int8: str = "exact", share_weights: bool = False,
            target_ncnn: int | None = None, outputs: list[str] | None = None, host_tail: bool = False,
            block_quant: str = "int8", nchw_inputs: list[str] | None = None) -> NcnnModel:
    """ONNX model (path or ModelProto) -> NcnnModel. Raises ConversionError with a one-line reason.

    `int8` places a quantized model's int8 (one of INT8_MODES): "exact" emulates every activation
    Q/DQ pair (onnxruntime's bits), "fast" drops those that feed no int8 layer, as ncnn's own tools.

    `input_values` fixes graph inputs to constants (they are then no ncnn inputs): e.g. a sample
    rate the model branches on with If, so the branch taken is known when converting.
    `progress(stage)` is told each stage (loading, each pass) as it starts. `target_ncnn` (a release
    date, default the newest known) writes only what that ncnn release reads (converter/ncnn_side/release_target.py).
    `outputs` converts only what computes those tensors (ONNX names); `host_tail` leaves what ncnn has
    no layers for to onnxruntime after ncnn (NcnnModel.tail, saved as `<stem>_tail.onnx`).
    `block_quant` places weight-only block-quantized MatMuls (MatMulNBits; one of BLOCK_QUANT_MODES):
    "int8" per-channel int8 Gemm (fast, small, within a stated deviation), "dequantize" float32,
    "keep" the blocks as ncnn's block-quantized Gemm (converter/lowering/genai_matmulnbits.py).
    `nchw_inputs` names channels-last inputs ncnn takes channels-first (passes/move_input_layout.py)."""
    if int8 not in INT8_MODES:
        raise ValueError(f"int8 mode must be one of {', '.join(INT8_MODES)}, got {int8!r}")
    if block_quant not in BLOCK_QUANT_MODES:
        raise ValueError(f"block_quant must be one of {', '.join(BLOCK_QUANT_MODES)}, got {block_quant!r}")
    if progress is not None:
        progress("loading")
    options = ConvertOptions(broadcast_fix, input_values, progress, int8, share_weights, target_ncnn, block_quant,
                             nchw_inputs)

    def prepared(shapes) -> tuple:
        warnings: list[str] = []
        proto = prepare_model(model, shapes, warnings, input_values)
        return (subgraph(proto, list(outputs)) if outputs else proto), warnings
    try:
        return convert_with_tail(*prepared(input_shapes), host_tail, options)
    except NeedsFixedSizes as fixed:        # a release without shape expressions: files at one size
        if fixed.decoder:                   # which a decoder step's growing cache cannot keep
            raise ConversionError(str(fixed)) from None
        return fixed.noted(convert_with_tail(*prepared(fixed.shapes(input_shapes)), host_tail, options))


@dataclass
class ConvertOptions:
    """What convert passes on to each conversion of a head (see convert_with_tail)."""
    broadcast_fix: bool = True
    input_values: dict[str, object] | None = None
    progress: Callable[[str], None] | None = None
    int8: str = "exact"
    share_weights: bool = False
    target_ncnn: int | None = None
    block_quant: str = "int8"
    nchw_inputs: list[str] | None = None

    def convert(self, proto, warnings: list[str]) -> NcnnModel:
        graph = graph_of_prepared(proto, list(warnings))
        graph.share_weights = self.share_weights
        graph.block_quant = self.block_quant
        graph.nchw_inputs = set(self.nchw_inputs or ())
        return convert_prepared(graph, proto, self.broadcast_fix, self.input_values, self.progress, self.int8,
                                self.target_ncnn)


MAX_CUTS = 8      # refusals found one conversion at a time (an If's, then the ops after it)


def convert_with_tail(proto, warnings: list[str], host_tail: bool, options: ConvertOptions = ConvertOptions()) -> NcnnModel:
    """Convert the prepared `proto`. A refusal a cut gets around is retried on the head without the refused
    nodes and what follows them, until a head converts: with `host_tail` that head is the result and the
    rest its tail; without, the first refusal is raised naming the tensors that head stops at."""
    refused: list[str] = []
    head, cut, first = proto, None, None
    for _ in range(MAX_CUTS):
        try:
            model = options.convert(head, warnings)
        except CutRefusal as exc:
            first = first or exc
            new = plan_cut(proto, refused + exc.tensors)
            if new is None or not new.head_outputs or new == cut:
                raise CutRefusal(str(first), first.tensors) from None
            refused += exc.tensors
            cut, head = new, subgraph(proto, new.head_outputs)
            continue
        except ConversionError as exc:
            if first is None:
                raise
            if not host_tail:       # the head does not convert either: the first refusal, without a cut to name
                raise CutRefusal(str(first), first.tensors) from None
            raise ConversionError(f"{first}; with --host-tail, the part before it does not convert either: "
                                  f"{exc}") from None
        if first is not None and not host_tail:
            raise CutRefusal(str(first) + cut_hint(cut), first.tensors)
        if cut is not None:
            tail_model = subgraph(proto, cut.tail_outputs, [t for t in cut.tail_inputs if t in cut.head_outputs])
            model.tail = HostTail.of(cut, tail_model, [o.name for o in proto.graph.output])
        return model
    raise CutRefusal(str(first), first.tensors)


def convert_prepared(graph: Graph, proto, broadcast_fix: bool = True,
                     input_values: dict[str, object] | None = None,
                     progress: Callable[[str], None] | None = None, int8: str = "exact",
                     target_ncnn: int | None = None) -> NcnnModel:
    """The conversion of a model already prepared (onnx_loader.prepare_model) and built into `graph`:
    verify prepares once and hands the same proto to onnxruntime. `int8`: as convert's."""
    graph.int8_mode = int8
    examples = example_shapes(proto, graph)         # before the pipeline rewrites the inputs
    skip = set() if broadcast_fix else {fix_broadcast}
    skip |= {p for p in PIPELINE if p.__name__ in skipped_passes(target_ncnn or NEWEST)}
    graph.ncnn_target = target_ncnn
    stats = run_pipeline(graph, skip=skip, progress=progress)
    stats.update(fit_release(graph, target_ncnn, examples, bool(cache_pairs(graph.inputs, graph.outputs))))
    if not broadcast_fix:       # what ncnn's own rule is left to broadcast (verify --no-broadcast-fix)
        stats["broadcasts_left"] = left_unfixed(graph)
    stats["warnings"] = list(graph.warnings)
    stats["notes"] = list(graph.notes)
    stats["model_weight_bytes"] = model_weight_bytes(proto)      # what the .bin is compared with
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
    record = read_sidecar(param_path, set(graph.tensors)) or declared_inputs(graph)
    tail = HostTail.load(Path(param_path).parent, record["tail"]) if "tail" in record else None
    return NcnnModel(graph, record={k: v for k, v in record.items() if k != "tail"}, tail=tail)


def output_paths(model_path: str | os.PathLike, out_dir: str | os.PathLike | None) -> tuple[Path, Path]:
    model_path = Path(model_path)
    folder = Path(out_dir) if out_dir is not None else model_path.parent
    stem = model_path.stem
    return folder / f"{stem}.ncnn.param", folder / f"{stem}.ncnn.bin"


def convert_merged(model, **options) -> dict[str, NcnnModel]:
    """optimum's merged decoder (path or ModelProto) -> {"prefill": NcnnModel, "decode": NcnnModel}: each
    If branch converted as its own file (converter/onnx_side/merged_decoder.py); `options` as convert's.
    Save them with save_merged, which names the pair in each file's record."""
    proto = onnx.load(str(model)) if isinstance(model, (str, os.PathLike)) else model
    if branch_input(proto) is None:
        raise ConversionError(f"not a merged decoder: no If on a boolean input {BRANCH_INPUT!r}")
    values, models = options.pop("input_values", None) or {}, {}
    for phase, value in PHASES.items():
        models[phase] = model = convert(proto, input_values={**values, BRANCH_INPUT: [value]}, **options)
        graph = model.graph
        for name in [n for n in graph.inputs if not graph.consumers(n) and n not in graph.outputs]:
            # read by the other branch only (the prefill's past): no input of this file
            if graph.producer(name) is not None:
                graph.remove_node(graph.producer(name))
            graph.inputs.remove(name)
        graph.remove_unused_tensors()
    return models


def save_merged(models: dict[str, NcnnModel], param_path, bin_path, fp16: bool = False) -> dict[str, tuple[Path, Path]]:
    """Save both files of convert_merged's pair beside `param_path` (`m.ncnn.param` -> `m_prefill.ncnn.param`,
    `m_decode.ncnn.param`); returns phase -> (param, bin)."""
    paths = pair_paths(Path(param_path), Path(bin_path))
    for phase, model in models.items():
        model.stats["pair"] = pair_record(phase, paths)
        model.save(*paths[phase], fp16=fp16)
    return paths
