"""`onnx2ncnn` command line: convert, verify, run. Bad input: one line on stderr, exit 2."""
from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import onnx

from converter.cli_parser import UsageError, build_parser
from converter.interpreter.blas_threads import ENV as BLAS_ENV
from converter.interpreter.blas_threads import choose_threads
from converter.ncnn_side.bin_size import size_line
from converter.ncnn_side.layout import LayoutError, to_ncnn
from converter.ncnn_side.reader import NcnnFormatError
from converter.onnx_side.loader import read_model
from converter.onnx_side.pnnx_args import pnnx_input_shapes, split_output_words, split_pnnx_args
from converter.rewrite.driver import explained
from converter.run_command import (
    check_input_names,
    check_output_path,
    run_real_ncnn,
    save_outputs,
    time_real_ncnn,
    time_runs,
    timing_line,
)
from converter.verification.check import verify
from converter.verification.image_input import ImageSpec, is_image_path, parse_image_spec
from converter.verification.report import check_report_path, write_report
from converter.verification.verify_text import broadcast_summary, verify_lines

from converter.onnx_side.merged_decoder import BRANCH_INPUT, PHASES, branch_input

from .api import convert, convert_merged, load_ncnn
from .batch_convert import Options, approximate_line, run_batch, write_conversion, write_merged, write_prompt_file
from .calibration import calibrated, int8_mode
from .generation import wants_prompt_file
from .interpreter import InterpreterError
from .ir import ConversionError

EXIT_OK, EXIT_MISMATCH, EXIT_BAD_INPUT = 0, 1, 2


def parse_dims(text: str) -> tuple[str, list[int]]:
    name, sep, dims = text.rpartition("=")
    try:
        shape = [None if d.strip() == "?" else int(d) for d in dims.split(",")]
    except ValueError:
        shape = None
    if not sep or not name or not shape:
        raise UsageError(f"--input-shape expects NAME=D1,D2,... (e.g. input=1,3,224,224; '?' keeps a "
                         f"dim dynamic), got '{text}'")
    return name, shape


def parse_value(text: str) -> tuple[str, list[float]]:
    name, sep, values = text.rpartition("=")
    try:
        numbers = [float(v) if any(c in v for c in ".eE") else int(v) for v in values.split(",")]
    except ValueError:
        numbers = None
    if not sep or not name or not numbers:
        raise UsageError(f"--input-value expects NAME=V1,V2,... (e.g. sr=16000), got '{text}'")
    return name, numbers


def _input_values(items: list[str] | None) -> dict[str, list]:
    return dict(parse_value(t) for t in items or [])


def _input_shapes(args) -> dict[str, list[int]]:
    """--input-shape NAME=DIMS, and pnnx's inputshape=[...] words (converter/onnx_side/pnnx_args.py)."""
    shapes = dict(parse_dims(t) for t in args.input_shape or [])
    if not getattr(args, "pnnx_shapes", None):
        return shapes
    proto, _ = read_model(args.model)
    initializers = {t.name for t in proto.graph.initializer}
    inputs = [(vi.name, onnx_dtype(vi)) for vi in proto.graph.input if vi.name not in initializers
              and vi.name not in _input_values(args.input_value)]
    pnnx = pnnx_input_shapes(args.pnnx_shapes, inputs)
    twice = sorted(set(pnnx) & set(shapes))
    if twice:
        raise UsageError(f"input(s) {', '.join(twice)} given both by inputshape and --input-shape")
    return {**shapes, **pnnx}


def onnx_dtype(value_info) -> np.dtype:
    return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(value_info.type.tensor_type.elem_type))


def named_paths(args) -> tuple[Path, Path] | None:
    """The (.param, .bin) the user named: --param/--bin, pnnx's ncnnparam=/ncnnbin=, or old onnx2ncnn's
    `MODEL.onnx OUT.param OUT.bin`; None: named after the model."""
    models = args.model
    if len(models) == 3 and models[1].endswith(".param") and models[2].endswith(".bin") and not (args.param or args.bin):
        args.model, args.param, args.bin = models[:1], models[1], models[2]
    if not (args.param or args.bin):
        return None
    if len(args.model) > 1 or Path(args.model[0]).is_dir():
        raise UsageError("convert: --param/--bin name one model's files; for several models use -o FOLDER")
    if args.output_dir:
        raise UsageError("convert: give either -o FOLDER or the file names (--param/--bin), not both")
    param = Path(args.param) if args.param else Path(args.bin).with_suffix(".param")
    bin_ = Path(args.bin) if args.bin else param.with_suffix(".bin")
    if param.resolve() == bin_.resolve():
        raise UsageError(f"convert: the .param and the .bin would both be {param}")
    return param, bin_


def cmd_convert(args) -> int:
    args.paths = named_paths(args)
    if args.calibrate:
        if len(args.model) > 1 or Path(args.model[0]).is_dir():
            raise UsageError("convert: --calibrate takes one model")
        with tempfile.TemporaryDirectory() as folder:
            source = calibrated(args.model[0], args.calibrate, folder, _input_shapes(args), not args.quiet)
            return _convert_one(args, source, int8_mode(args))
    if len(args.model) > 1 or Path(args.model[0]).is_dir():
        if args.outputs or args.nchw_input:
            raise UsageError(f"convert: {'--outputs names tensors' if args.outputs else '--nchw-input names inputs'} "
                             f"of one model; convert several models one by one")
        options = Options(args.output_dir, dict(parse_dims(t) for t in args.input_shape or []),
                          _input_values(args.input_value), args.pnnx_shapes or {}, args.fp16,
                          args.share_weights, args.target_ncnn, host_tail=args.host_tail)
        return run_batch(args.model, options, args.jobs, args.json, _shows_progress(args))
    return _convert_one(args, args.model[0], int8_mode(args))


def _convert_one(args, source: str, int8: str) -> int:
    """Convert `source` (the model, or its calibrated QDQ form) into files named after args.model."""
    args.model = args.model[0]
    options = dict(input_shapes=_input_shapes(args), input_values=_input_values(args.input_value), int8=int8,
                   share_weights=args.share_weights, target_ncnn=args.target_ncnn,
                   outputs=_output_names(args.outputs), host_tail=args.host_tail, block_quant=args.block_quant,
                   nchw_inputs=args.nchw_input)
    if _is_merged(args, source):
        return _convert_merged(args, source, options)
    progress = Progress(label="convert") if _shows_progress(args) else None
    try:
        model = convert(source, progress=progress, **options)
        if progress is not None:
            progress("writing")
        result = write_conversion(model, args.model, args.output_dir, args.fp16, args.paths)
        for warning in result["warnings"]:
            print(f"onnx2ncnn: warning: {warning}", file=sys.stderr)
        for note in model.stats.get("notes", []):
            print(f"onnx2ncnn: note: {note}", file=sys.stderr)
        if wants_prompt_file(result):     # a generation starts from it
            model.graph = None          # its weights, before the second conversion holds another copy
            result["prompt_param"] = write_prompt_file(source, result, options, args.fp16)
    finally:    # a refused model must not get a progress line after its one error line
        if progress is not None:
            progress.timer.cancel()
    if progress is not None:
        progress.done()
    param, bin_, script = result["param"], result["bin"], result["script"]
    if args.json:
        print(json.dumps(result))
        return EXIT_OK
    print(f"wrote {param} and {bin_}: {result['layers']} layers; {broadcast_summary(model.stats)}")
    print(size_line(result))
    if "prompt_param" in result:
        print(f"  and {result['prompt_param']}: the same model with the past removed, on the same .bin "
              f"(a generation's first call: ncnn holds no empty past)")
    if "int8_layers" in model.stats:     # a quantized model: what runs int8, what runs in float and why
        dropped = f"; {len(model.stats['int8_dropped'])} activation Q/DQ pairs dropped" if "int8_dropped" in model.stats else ""
        print(f"  {model.stats.get('int8_layers', 0)} layers run int8 ({model.stats.get('int8_mode')} mode{dropped})")
        for node, why in model.stats["int8_fallbacks"].items():
            print(f"  float: {node}: {why}")
    elif result["approximate_nodes"]:      # dynamically quantized, no Q/DQ pairs: all of it in float
        print(f"  {approximate_line(result['approximate_nodes'])}")
    if model.tail is not None:
        print(f"  host tail: {result['tail']['file']} runs in onnxruntime after ncnn (refused: "
              f"{', '.join(model.tail.refused)}), on ncnn's outputs {', '.join(e['onnx'] for e in result['outputs'])}")
    print(f"  run them with the ncnn package: python {script} --check (compares with onnxruntime)")
    for entry in result["inputs"] + result["outputs"]:
        if entry["ncnn"] != entry["onnx"]:
            print(f"  blob '{entry['ncnn']}' is ONNX tensor '{entry['onnx']}'")
    return EXIT_OK


def _is_merged(args, source: str) -> bool:
    """optimum's merged decoder, its branch input not fixed by --input-value: it converts to a pair."""
    if args.outputs or args.host_tail or BRANCH_INPUT in _input_values(args.input_value):
        return False
    try:
        return branch_input(onnx.load(source, load_external_data=False)) is not None
    except Exception:       # noqa: BLE001 -- an unreadable file: convert's own loading says why
        return False


def _convert_merged(args, source: str, options: dict) -> int:
    """Both files of a merged decoder (converter/onnx_side/merged_decoder.py), converted before either is
    written with `options` as the single file's (no --outputs or --host-tail: _is_merged)."""
    models = convert_merged(source, **options)
    results = write_merged(models, args.model, args.output_dir, args.fp16, args.paths)
    if args.json:
        print(json.dumps({"pair": results}))
        return EXIT_OK
    for phase, result in results.items():
        print(f"wrote {result['param']} and {result['bin']} ({phase}, {BRANCH_INPUT}={PHASES[phase]}): "
              f"{result['layers']} layers")
    print(f"  generate with them: python {results['decode']['script']} --generate 32 --check "
          f"(the first call runs the prefill file; compares with onnxruntime on the merged file)")
    return EXIT_OK


def _output_names(text: str | None) -> list[str] | None:
    """--outputs NAME[,NAME...]: the tensors to convert up to."""
    if text is None:
        return None
    names = [n for n in text.split(",") if n]
    if not names:
        raise UsageError("--outputs expects NAME[,NAME...] (ONNX tensor names), got ''")
    return names


def _shows_progress(args) -> bool:
    """Stage lines only for a person watching: never with --quiet or when stderr is a file or pipe."""
    return not args.quiet and sys.stderr.isatty()


def _npy_inputs(items: list[str] | None) -> dict:
    """NAME=FILE.npy arrays, and NAME=IMAGE[:options] specs that become arrays once the input's
    shape is known (converter/verification/image_input.py)."""
    arrays = {}
    for text in items or []:
        name, sep, path = text.partition("=")
        if not sep or not name or not path:
            raise UsageError(f"--input expects NAME=FILE.npy or NAME=IMAGE.png[:size=WxH,mean=...,std=...], "
                             f"got '{text}'")
        if is_image_path(path):
            arrays[name] = parse_image_spec(name, path)
            continue
        try:
            with open(path, "rb") as f:
                if f.read(6) != b"\x93NUMPY":      # a text file would get numpy's allow_pickle advice
                    raise UsageError(f"--input {name}: {path} is not a .npy file (numpy.save's format) "
                                     f"nor a PNG/PPM/PGM image")
            arrays[name] = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise UsageError(f"--input {name}: cannot read {path}: {exc}") from None
    return arrays


class Progress:
    """Stage lines on stderr once a run has taken more than `after` seconds: a timer shows
    the stage under way when that time passes, and every later stage as it starts."""

    def __init__(self, after: float = 2.0, stream=None, label: str = "verify"):
        self.start, self.after, self.stream = time.monotonic(), after, stream or sys.stderr
        self.label = label
        self.pending: str | None = None
        self.shown = False
        self.lock = threading.Lock()
        self.timer = threading.Timer(after, self._show_if_slow)
        self.timer.daemon = True
        self.timer.start()

    def __call__(self, stage: str) -> None:
        with self.lock:
            self.pending = stage
        self._show_if_slow()

    def _show_if_slow(self) -> None:
        with self.lock:
            elapsed = time.monotonic() - self.start
            if self.pending and (self.shown or elapsed >= self.after):
                print(f"{self.label}: {self.pending} ({elapsed:.1f} s)", file=self.stream, flush=True)
                self.pending, self.shown = None, True

    def done(self) -> None:
        self.timer.cancel()
        if self.shown:
            self("done")


def cmd_verify(args) -> int:
    if args.report:
        check_report_path(args.report)
    progress = Progress() if _shows_progress(args) else None
    try:
        with tempfile.TemporaryDirectory() as folder:
            model, float_model = args.model, None
            if args.calibrate:
                model, float_model = calibrated(args.model, args.calibrate, folder, _input_shapes(args)), args.model
            report = verify(model, inputs=_npy_inputs(args.input), input_shapes=_input_shapes(args),
                            seed=args.seed, rtol=args.rtol, atol=args.atol, backend=args.backend,
                            broadcast_fix=not args.no_broadcast_fix, progress=progress,
                            input_values=_input_values(args.input_value), layout=args.layout,
                            precision=args.precision, int8=int8_mode(args), float_model=float_model,
                            target_ncnn=args.target_ncnn, ncnn_python=args.ncnn_python,
                            outputs=_output_names(args.outputs), host_tail=args.host_tail,
                            block_quant=args.block_quant, nchw_inputs=args.nchw_input)
    finally:    # a refused model must not get a progress line after its one error line
        if progress is not None:
            progress.timer.cancel()
    if progress is not None:
        progress.done()
    if args.report:
        write_report(report, args.report, title=f"onnx2ncnn verify {args.model}")
    if args.json:
        print(json.dumps(report.to_json()))
    else:
        for line in verify_lines(report):
            print(line)
    return EXIT_OK if report.passed else EXIT_MISMATCH


def _images_as_arrays(model, feeds: dict, layout: str) -> dict:
    """Image inputs decoded to the shape the files' io record gives (in the layout asked for)."""
    entries = {name: e for e in model.io()["inputs"] for name in (e["onnx"], e["ncnn"])}
    for name, value in feeds.items():
        if isinstance(value, ImageSpec):
            entry = entries.get(name, {})
            array = value.to_array(name, entry.get("onnx_shape"))
            feeds[name] = to_ncnn(array, entry) if layout == "ncnn" and entry else array
    return feeds


def cmd_run(args) -> int:
    out = check_output_path(args.output)
    if args.threads and args.backend == "interp":
        os.environ[BLAS_ENV] = str(args.threads)        # read when the run's plan is built
    try:
        model = load_ncnn(args.param, args.bin)
        feeds = _npy_inputs(args.input)
        check_input_names(model, feeds)
        feeds = _images_as_arrays(model, feeds, args.layout)
        if args.backend == "ncnn":
            outputs = run_real_ncnn(model, args.param, args.bin, feeds, args.layout, args.threads or 2)
        else:
            outputs = model.run(feeds, layout=args.layout)
        timing = None
        if args.time and args.backend == "ncnn":
            timing = time_real_ncnn(model, args.param, args.bin, feeds, args.layout, args.threads or 2, args.warmup, args.time)
        elif args.time:
            timing = time_runs(lambda: model.run(feeds, layout=args.layout), args.warmup, args.time)
    except (NcnnFormatError, InterpreterError, KeyError, OSError, LayoutError) as exc:
        raise ConversionError(str(exc).strip("'\"")) from None
    if out is not None: save_outputs(out, outputs)
    for name, value in outputs.items():
        print(f"{name}: shape {list(value.shape)}, mean {float(value.mean()):.6g}")
    if timing is not None:
        print(timing_line(args.backend, args.threads or (2 if args.backend == "ncnn" else choose_threads()), timing))
    return EXIT_OK


COMMANDS = {"convert": cmd_convert, "verify": cmd_verify, "run": cmd_run}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv:                  # a first try without arguments: show what there is to run
        print(build_parser().format_help(), file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        if argv[0].endswith(".onnx"):       # old onnx2ncnn's `onnx2ncnn MODEL.onnx OUT.param OUT.bin`
            argv = ["convert", *argv]
        argv, pnnx_shapes = split_pnnx_args(argv)
        argv, pnnx_files = split_output_words(argv)
        args = build_parser().parse_args(argv)
        if pnnx_shapes and args.command == "run":
            raise UsageError("run: inputshape is for convert and verify (run takes the arrays' own shapes)")
        if pnnx_files and args.command != "convert":
            raise UsageError(f"{args.command}: ncnnparam=/ncnnbin= name convert's files")
        args.pnnx_shapes = pnnx_shapes
        for key, path in pnnx_files.items():
            if getattr(args, key):
                raise UsageError(f"convert: --{key} and ncnn{key}= both given")
            setattr(args, key, path)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            # numpy/onnx warnings print source lines: the user gets one line or a result, never those
            warnings.simplefilter("ignore")
            with explained(sys.stderr if getattr(args, "explain_fusions", False) else None):
                return COMMANDS[args.command](args)
    except (UsageError, ConversionError) as exc:
        print(f"onnx2ncnn: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:       # stdout closed early (e.g. piped into head): not an error of ours
        return EXIT_OK
    except Exception as exc:      # the last guard: a bug of ours, still one line and exit 2
        print(f"onnx2ncnn: internal error ({type(exc).__name__}: {_one_line(exc)}); please report this "
              f"with the model", file=sys.stderr)
        return EXIT_BAD_INPUT


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
