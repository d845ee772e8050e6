"""`onnx2ncnn` command line: convert, verify, run. Bad input: one line on stderr, exit 2."""
from __future__ import annotations

import argparse
import json
import sys

from .ir import ConversionError

EXIT_OK, EXIT_MISMATCH, EXIT_BAD_INPUT = 0, 1, 2


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        raise UsageError(f"{self.prog}: {message}")


def parse_dims(text: str) -> tuple[str, list[int]]:
    name, sep, dims = text.rpartition("=")
    try:
        shape = [int(d) for d in dims.split(",")]
    except ValueError:
        shape = None
    if not sep or not name or not shape:
        raise UsageError(f"--input-shape expects NAME=D1,D2,... (e.g. input=1,3,224,224), got '{text}'")
    return name, shape


def _input_shapes(items: list[str] | None) -> dict[str, list[int]]:
    return dict(parse_dims(t) for t in items or [])


def cmd_convert(args) -> int:
    from .api import convert, output_paths
    model = convert(args.model, _input_shapes(args.input_shape))
    param, bin_ = output_paths(args.model, args.output_dir)
    try:
        model.save(param, bin_, fp16=args.fp16)
    except OSError as exc:
        raise ConversionError(f"cannot write output files: {exc.strerror or exc}: {exc.filename or param.parent}")
    io = model.io()
    if args.json:
        print(json.dumps({"param": str(param), "bin": str(bin_), "layers": len(model.graph.nodes),
                          "reshapes_inserted": model.stats.get("reshapes_inserted", 0), **io}))
        return EXIT_OK
    print(f"wrote {param} and {bin_}: {len(model.graph.nodes)} layers, "
          f"{model.stats.get('reshapes_inserted', 0)} broadcast reshapes inserted")
    for entry in io["inputs"] + io["outputs"]:
        if entry["ncnn"] != entry["onnx"]:
            print(f"  blob '{entry['ncnn']}' is ONNX tensor '{entry['onnx']}'")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="onnx2ncnn", description="ONNX -> ncnn converter that gets broadcasting right")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    conv = sub.add_parser("convert", help="write MODEL as ncnn .param/.bin")
    conv.add_argument("model")
    conv.add_argument("-o", "--output-dir", help="output folder (default: beside the model)")
    conv.add_argument("--input-shape", action="append", metavar="NAME=DIMS",
                      help="fix an input's shape, e.g. input=1,3,224,224 (repeatable)")
    conv.add_argument("--fp16", action="store_true", help="store weights as float16 where ncnn allows")
    conv.add_argument("--json", action="store_true", help="print one JSON object describing the result")
    conv.set_defaults(func=cmd_convert)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return args.func(args)
    except (UsageError, ConversionError) as exc:
        print(f"onnx2ncnn: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130
