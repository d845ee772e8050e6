"""`onnx2ncnn convert` on files: one model as always, or many at once in worker processes with a
summary table (or one JSON list) and exit 2 when any was refused."""
from __future__ import annotations

import json
import multiprocessing
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from pathlib import Path

import numpy as np
import onnx

from converter.ncnn_side.bin_size import size_record
from converter.generation import prompt_input_shapes, wants_prompt_file
from converter.ncnn_side.layout import sidecar_bytes, sidecar_path
from converter.ncnn_side.writer import bin_chunks, param_text, write_atomically
from converter.onnx_side.host_tail import script_block, tail_path
from converter.onnx_side.isolated_inference import signal_name
from converter.onnx_side.loader import read_model
from converter.onnx_side.merged_decoder import pair_paths, pair_record
from converter.onnx_side.pnnx_args import pnnx_input_shapes
from converter.shapes.decoder_layout import prompt_param_path
from converter.verification.fp16 import weight_warnings
from converter.verification.harness import harness_script, script_path

from .api import NcnnModel, convert, output_paths
from .ir import ConversionError

EXIT_OK, EXIT_REFUSED = 0, 2


@dataclass
class Options:
    """What applies to every model of a batch; shapes and values only where the model has that input."""
    output_dir: str | None = None
    input_shapes: dict[str, list] = field(default_factory=dict)
    input_values: dict[str, list] = field(default_factory=dict)
    pnnx_shapes: dict[str, str] = field(default_factory=dict)
    fp16: bool = False
    share_weights: bool = False
    target_ncnn: int | None = None      # --target-ncnn: the ncnn release the files are for
    host_tail: bool = False


def write_conversion(model: NcnnModel, model_path, output_dir, fp16: bool, paths: tuple | None = None) -> dict:
    """Save .param/.bin/.json and the harness script, all or none; returns what --json prints.
    `paths`: the (.param, .bin) the user named (convert --param/--bin), else named after the model."""
    if fp16:
        model.stats.setdefault("warnings", []).extend(weight_warnings(model.graph))
    param, bin_ = paths or output_paths(model_path, output_dir)
    script = script_path(param)
    text = harness_script(model, param, bin_, model_path, model.stats["example_shapes"],
                          model.stats["fixed_inputs"], script_block(model.tail, tail_path(param).name))
    try:
        model.save(param, bin_, fp16=fp16, extra={script: text.encode()})
    except OSError as exc:
        raise ConversionError(f"cannot write output files: {exc.strerror or exc}: {exc.filename or param.parent}")
    size, size_warnings = size_record(model.graph, bin_.stat().st_size, model.stats.get("model_weight_bytes"),
                                      model.stats.get("batch_repeated_weight_bytes", 0),
                                      (model.stats.get("gemm_weights_shared", 0), model.stats.get("gemm_weight_bytes_shared", 0)))
    return {"param": str(param), "bin": str(bin_), "script": str(script), "layers": len(model.graph.nodes),
            "reshapes_inserted": model.stats.get("reshapes_inserted", 0), **model.io(), **size,
            "warnings": model.stats.get("warnings", []) + size_warnings,
            **{k: model.stats[k] for k in ("int8_layers", "int8_fallbacks", "int8_mode", "int8_dropped")
               if k in model.stats},
            **({"tail": model.tail.record(str(tail_path(param)))} if model.tail is not None else {}),
            **record_fields(model, param)}


def write_prompt_file(source, result: dict, options: dict, fp16: bool = False) -> str:
    """The prompt file of a decoder step (generation.wants_prompt_file): `source` converted again with
    `options` (convert's keyword arguments) and its first past's growing axis fixed at 0, which drops
    every past (converter/onnx_side/empty_past.py). Its .param and io
    record go beside `result`'s files (write_conversion's); it loads their .bin, checked here to hold
    the same bytes. Returns its .param path; ConversionError (one line) when it cannot be made, after
    removing `result`'s files (a decode file without its prompt file cannot start a generation)."""
    try:
        return _prompt_file(source, result, options, fp16)
    except ConversionError:
        param = Path(result["param"])
        for path in (param, Path(result["bin"]), Path(result["script"]), sidecar_path(param),
                     *([tail_path(param)] if "tail" in result else [])):
            path.unlink(missing_ok=True)
        raise


def _prompt_file(source, result: dict, options: dict, fp16: bool) -> str:
    shapes = {**(options.get("input_shapes") or {}), **prompt_input_shapes(result)}
    prompt = convert(source, **{**options, "input_shapes": shapes})
    if not _same_bin(prompt.graph, fp16, result["bin"]):
        raise ConversionError(f"the prompt file (the past removed) would need other weights than {result['bin']}")
    param = prompt_param_path(result["param"])
    try:
        write_atomically({param: param_text(prompt.graph, prompt.names).encode(),
                          sidecar_path(param): sidecar_bytes(prompt.io())})
    except OSError as exc:
        raise ConversionError(f"cannot write output files: {exc.strerror or exc}: {exc.filename or param.parent}")
    return str(param)


COMPARED = 1 << 24     # bytes of the .bin read and compared at a time


def _same_bin(graph, fp16: bool, bin_path) -> bool:
    """Whether `graph`'s .bin would be the bytes of the file `bin_path`, read a weight at a time."""
    with open(bin_path, "rb") as f:
        for chunk in bin_chunks(graph, fp16):
            view = memoryview(chunk).cast("B")
            for start in range(0, len(view), COMPARED):       # no copy of a whole weight
                if f.read(min(COMPARED, len(view) - start)) != view[start:start + COMPARED]:
                    return False
        return f.read(1) == b""


def write_merged(models: dict[str, NcnnModel], model_path, output_dir, fp16: bool, paths: tuple | None = None) -> dict:
    """A merged decoder's prefill and decode files (api.convert_merged), each record naming the pair:
    `<stem>_prefill.ncnn.*` and `<stem>_decode.ncnn.*` (or beside the --param/--bin named); phase -> what
    write_conversion returns."""
    pair = pair_paths(*(paths or output_paths(model_path, output_dir)))
    for phase, model in models.items():
        model.stats["pair"] = pair_record(phase, pair)
    return {phase: write_conversion(model, model_path, output_dir, fp16, pair[phase]) for phase, model in models.items()}


def record_fields(model: NcnnModel, param) -> dict:
    """--json's path of the io record, int8_layers always (0 for a float model), and approximate_nodes:
    dynamically quantized nodes emulated in float, near onnxruntime's numbers but not equal (0: none)."""
    return {"json": str(sidecar_path(param)), "int8_layers": model.stats.get("int8_layers", 0),
            "approximate_nodes": model.stats.get("approximate_nodes", 0)}


def approximate_line(nodes: int) -> str:
    return (f"approximate: {nodes} dynamically quantized node(s) emulated in float32, near onnxruntime's "
            f"numbers, not equal (onnx2ncnn verify measures how near)")


def expand_models(paths: list[str]) -> list[str]:
    """The models named: a folder stands for its .onnx files, sorted; a path named twice counts once."""
    models: list[str] = []
    for text in paths:
        path = Path(text)
        if path.is_dir():
            found = sorted(str(p) for p in path.iterdir() if p.suffix == ".onnx" and p.is_file())
            if not found:
                raise ConversionError(f"folder {path} has no .onnx files")
            models += found
        else:
            models.append(text)
    return list(dict.fromkeys(models))


def check_outputs_apart(models: list[str], output_dir: str | None) -> None:
    """Refuse, before converting any, two models whose files would overwrite each other's."""
    seen: dict[Path, str] = {}
    for model in models:
        param = output_paths(model, output_dir)[0].resolve()
        first = seen.setdefault(param, model)
        if first != model:
            raise ConversionError(f"{first} and {model} would both write {param.name} in {param.parent}: "
                                  f"convert them into different folders (-o)")


def _model_options(proto: onnx.ModelProto, options: Options) -> tuple[dict, dict]:
    """The batch's --input-shape/--input-value/inputshape= that fit this model's inputs."""
    initializers = {t.name for t in proto.graph.initializer}
    fed = [vi for vi in proto.graph.input if vi.name not in initializers]
    names = {vi.name for vi in fed}
    values = {k: v for k, v in options.input_values.items() if k in names}
    shapes = {k: v for k, v in options.input_shapes.items() if k in names}
    kinds = [(vi.name, np.dtype(onnx.helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type)))
             for vi in fed if vi.name not in values]
    pnnx = pnnx_input_shapes(options.pnnx_shapes, kinds)
    twice = sorted(set(pnnx) & set(shapes))
    if twice:
        raise ConversionError(f"input(s) {', '.join(twice)} given both by inputshape and --input-shape")
    return {**shapes, **pnnx}, values


def convert_one(model_path: str, options: Options) -> dict:
    """One model of a batch (run in a worker process): a row for the table, never an exception."""
    start = time.monotonic()
    row = {"model": model_path, "status": "ok"}
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            proto, _ = read_model(model_path)
            shapes, values = _model_options(proto, options)
            kwargs = dict(input_values=values, share_weights=options.share_weights, target_ncnn=options.target_ncnn,
                          host_tail=options.host_tail)
            converted = convert(proto, shapes, **kwargs)
            del proto
            row.update(write_conversion(converted, model_path, options.output_dir, options.fp16))
            if wants_prompt_file(row):       # a generation starts from it
                converted.graph = None
                row["prompt_param"] = write_prompt_file(model_path, row, {**kwargs, "input_shapes": shapes},
                                                        options.fp16)
    except ConversionError as exc:
        row.update(status="refused", error=_one_line(exc))
    except MemoryError:
        row.update(status="error", error="out of memory")
    except Exception as exc:      # a bug of ours: this model's row says so, the others go on
        row.update(status="error", error=f"internal error ({type(exc).__name__}: {_one_line(exc)})")
    row["seconds"] = round(time.monotonic() - start, 2)
    return row


def convert_many(models: list[str], options: Options, jobs: int,
                 on_done: Callable[[dict, int], None] | None = None) -> list[dict]:
    """Rows in the models' order. Each model converts in a process of its own, at most `jobs` at
    once: forked, so it starts at once with the converter already imported (spawned workers
    import it again, seconds each on a busy machine, and from the folder they start in), and its
    peak memory goes back to the system when it ends; a worker that dies fails its model only."""
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    context = multiprocessing.get_context(method)
    pending, running, rows = list(models), {}, {}
    while pending or running:
        while pending and len(running) < jobs:
            model = pending.pop(0)
            receive, send = context.Pipe(duplex=False)
            sys.stdout.flush()       # a forked worker must not write the parent's buffered lines again
            sys.stderr.flush()
            worker = context.Process(target=_worker, args=(send, model, options), daemon=True)
            worker.start()
            send.close()            # the worker holds the only write end: its death ends the pipe
            running[receive] = (model, worker)
        for receive in wait(list(running)):
            model, worker = running.pop(receive)
            try:
                row = receive.recv()
            except EOFError:
                worker.join()
                row = {"model": model, "status": "error", "seconds": None,
                       "error": worker_death(worker.exitcode)}
            receive.close()
            worker.join()
            rows[model] = row
            if on_done is not None:
                on_done(row, len(rows))
    return [rows[m] for m in models]


def worker_death(exitcode: int | None) -> str:
    """Why a worker ended without a row: the kernel's SIGKILL is most often the out-of-memory killer."""
    how = signal_name(exitcode)
    return f"the worker process died ({how}{'; out of memory?' if how == 'SIGKILL' else ''})"


def _worker(send, model: str, options: Options) -> None:
    send.send(convert_one(model, options))
    send.close()


def exit_code(rows: list[dict]) -> int:
    return EXIT_OK if all(r["status"] == "ok" for r in rows) else EXIT_REFUSED


NOTE_WIDTH = 200      # a refusal's message beyond this is cut in the table (whole in --json)


def _note(row: dict) -> str:
    """The table's last column: the refusal (cut at NOTE_WIDTH), or why an ok model is approximate."""
    text = row.get("error", "")
    if not text and row.get("approximate_nodes"):
        text = f"{row['approximate_nodes']} dynamically quantized node(s) in float32: near onnxruntime, not equal"
    if len(text) > NOTE_WIDTH:
        cut = text[:NOTE_WIDTH].rsplit(" ", 1)[0]
        text = f"{cut} ... [{len(text) - len(cut)} more characters: --json, or convert it alone]"
    return text


def _status(row: dict) -> str:
    return "approximate" if row["status"] == "ok" and row.get("approximate_nodes") else row["status"]


def summary_table(rows: list[dict]) -> list[str]:
    """model, status (ok, approximate, refused, error), layers, seconds, note; then a count."""
    header = ("model", "status", "layers", "seconds", "note")
    cells = [(r["model"], _status(r), str(r.get("layers", "-")),
              "-" if r.get("seconds") is None else f"{r['seconds']:.2f}", _note(r))
             for r in rows]
    widths = [max(len(c[i]) for c in [header, *cells]) for i in range(4)]
    lines = []
    for c in [header, *cells]:
        line = f"{c[0]:<{widths[0]}}  {c[1]:<{widths[1]}}  {c[2]:>{widths[2]}}  {c[3]:>{widths[3]}}  {c[4]}"
        lines.append(line.rstrip())
    done = sum(r["status"] == "ok" for r in rows)
    approximate = sum(_status(r) == "approximate" for r in rows)
    lines.append(f"converted {done} of {len(rows)} models" + ("" if done == len(rows) else
                                                            f"; {len(rows) - done} refused or failed")
                 + (f"; {approximate} of them approximate (dynamically quantized)" if approximate else ""))
    return lines


def run_batch(paths: list[str], options: Options, jobs: int, as_json: bool, show_progress: bool) -> int:
    """The CLI's many-models convert: table (or JSON list) on stdout, warnings and progress on stderr."""
    models = expand_models(paths)
    check_outputs_apart(models, options.output_dir)
    start = time.monotonic()

    def on_done(row: dict, count: int) -> None:
        if show_progress:
            print(f"convert: [{count}/{len(models)}] {row['model']}: {row['status']} "
                  f"({time.monotonic() - start:.1f} s)", file=sys.stderr, flush=True)

    rows = convert_many(models, options, jobs, on_done)
    if as_json:
        print(json.dumps(rows))
        return exit_code(rows)
    for row in rows:
        for warning in row.get("warnings", []):
            print(f"onnx2ncnn: warning: {row['model']}: {warning}", file=sys.stderr)
    for line in summary_table(rows):
        print(line)
    return exit_code(rows)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
