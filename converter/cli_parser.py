"""`onnx2ncnn`'s argument parser: the subcommands, their options and help, and the option types.
converter/cli.py runs what it parses (COMMANDS); bad arguments raise UsageError, one line."""
from __future__ import annotations

import argparse
from importlib.metadata import PackageNotFoundError, version

from converter.ncnn_side.layout import LAYOUTS
from converter.ncnn_side.releases import NEWEST, OLDEST, parse_release
from converter.run_command import add_run_options

from .calibration import add_int8_options


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        # main() prints "onnx2ncnn: error: "; a subcommand's name follows it, the program's does not
        command = self.prog.removeprefix("onnx2ncnn").strip()
        raise UsageError(f"{command}: {message}" if command else message)


def _version() -> str:
    try:
        return version("onnx2ncnn")
    except PackageNotFoundError:        # run from a source tree that was never installed
        return "unknown (not installed)"


VALUE_HELP = ("make an input a constant, e.g. sr=16000 (repeatable): the converted model has no such "
              "input, and Ifs on it keep only the branch taken")


LAYOUT_HELP = ("onnx: arrays in and out as the ONNX model takes and gives them, batch axis included; "
               "ncnn: as ncnn's Mats, without the batch axis (default: onnx)")


SHAPE_HELP = ("fix an input's shape, e.g. input=1,3,224,224; '?' keeps a dim dynamic (repeatable; "
              "default: a dynamic leading dim is 1, the others stay dynamic). pnnx's form works too: "
              "inputshape=[1,3,224,224]f32,[1,32]i64 (inputs in order) and inputshape2=[...] (dims that "
              "differ stay dynamic)")


NCHW_HELP = ("a channels-last image input (NHWC, as TF/keras exports take) whose readers begin with a Transpose "
             "to channels-first, after elementwise steps maybe: ncnn's Input takes it channels-first (c,h,w, what "
             "ncnn::Mat::from_pixels fills) and the Transpose goes; the .json record tells run and the script "
             "(repeatable; default: the model's layout, and a note when this applies)")


def add_nchw_option(parser) -> None:
    parser.add_argument("--nchw-input", action="append", metavar="NAME", help=NCHW_HELP)


PER_MODEL = "; with several models it applies to each model that has that input"


def _jobs(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expects a number of worker processes >= 1, got '{text}'")
    return int(text)


def _release(text: str) -> int:
    try:
        release = parse_release(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if not OLDEST <= release:
        raise argparse.ArgumentTypeError(f"onnx2ncnn writes files for ncnn {OLDEST} and newer (the oldest "
                                         f"release its tests run), got {release}")
    return release


def add_target_option(parser) -> None:
    parser.add_argument("--target-ncnn", type=_release, metavar="RELEASE", help=f"write only layers and params "
                        f"this ncnn release reads (a date such as {OLDEST}), in older forms where they exist; "
                        f"refuse naming the node otherwise (default: {NEWEST}, the newest known)")


def add_explain_option(parser) -> None:
    parser.add_argument("--explain-fusions", action="store_true", help="print on stderr, for each fusion pass "
                        "(GELU, norms, attention, ...), how often it fired and, for each node a pattern starts "
                        "from that did not fuse, the node's name and why (default: quiet)")


def add_block_quant_option(parser) -> None:
    parser.add_argument("--block-quant", choices=["int8", "dequantize", "keep"], default="int8",
                        help="4-bit block-quantized weights (onnxruntime-genai's MatMulNBits): int8 runs ncnn's "
                        "int8 Gemm (1.6x the 4-bit size, fast, activations quantized per row: logits within about "
                        "2e-2 of onnxruntime's); dequantize stores float32 (exact, fast, 6.4x); "
                        "keep stores the blocks (exact, smallest, ncnn's slow reference loop) (default: int8)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="onnx2ncnn", description="ONNX -> ncnn converter that gets broadcasting right")
    parser.add_argument("--version", action="version", version=f"onnx2ncnn {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    conv = sub.add_parser("convert", help="write MODEL as ncnn .param/.bin")
    conv.add_argument("model", nargs="+", help="the .onnx file(s); a folder means its .onnx files, "
                      "sorted. Several models: a summary table (or a JSON list), exit 2 if any is refused")
    conv.add_argument("-o", "--output-dir", help="output folder (default: beside each model)")
    conv.add_argument("--param", metavar="OUT.param", help="one model: the .param file to write; the .json "
                      "record and <stem>_ncnn.py go beside it (default: MODEL's stem + .ncnn.param; pnnx's "
                      "ncnnparam=OUT.param and old onnx2ncnn's `onnx2ncnn MODEL.onnx OUT.param OUT.bin` work too)")
    conv.add_argument("--bin", metavar="OUT.bin", help="one model: the .bin file to write (default: the "
                      "--param path with .bin, or MODEL's stem + .ncnn.bin)")
    conv.add_argument("--input-shape", action="append", metavar="NAME=DIMS", help=SHAPE_HELP + PER_MODEL)
    conv.add_argument("--input-value", action="append", metavar="NAME=VALUES", help=VALUE_HELP + PER_MODEL)
    add_nchw_option(conv)
    conv.add_argument("-j", "--jobs", type=_jobs, default=1, metavar="N",
                      help="with several models, convert N at once, each in a worker process (default: 1)")
    conv.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr (default: "
                      "stages of a slow conversion are shown when stderr is a terminal, never otherwise)")
    conv.add_argument("--share-weights", action="store_true", help="write a weight several layers repeat "
                      "once: a 2-D Conv over a batch of 2..16 reads it sample by sample (dynamic-weight "
                      "Convolution; measured 1.2-2.5x slower in real ncnn), Gemms and reused attention blocks "
                      "holding the same weight read one MemoryData (measured 2.1-2.6x slower on chython-rxnmap)")
    conv.add_argument("--fp16", action="store_true", help="store weights as float16 where ncnn allows "
                      "(default: float32)")
    conv.add_argument("--outputs", metavar="NAME[,NAME...]", help="convert only what computes these ONNX "
                      "tensors, which become the outputs (default: the model's outputs)")
    conv.add_argument("--host-tail", action="store_true", help="where ncnn has no layers (TopK, "
                      "NonMaxSuppression, NonZero, an If on data, ...), convert up to there and write the rest as "
                      "<stem>_tail.onnx, which the generated script and load_ncnn(...).run run in onnxruntime "
                      "after ncnn (default: refuse, naming the tensors to cut at)")
    conv.add_argument("--json", action="store_true", help="print one JSON object describing the result, "
                      "a list of them for several models (default: a summary line)")
    add_int8_options(conv)
    add_block_quant_option(conv)
    add_target_option(conv)
    add_explain_option(conv)

    ver = sub.add_parser("verify", help="convert in memory and compare with onnxruntime")
    ver.add_argument("model", help="the .onnx file")
    ver.add_argument("--input", action="append", metavar="NAME=FILE",
                     help="an input: FILE.npy, or an image (PNG, PPM; JPEG with Pillow) with options "
                     "IMAGE:size=WxH,mean=R,G,B,std=R,G,B,scale=S,order=rgb|bgr,fit=stretch|letterbox,pad=P, "
                     "pixels * scale (default 1/255) then (x - mean) / std; letterbox keeps the aspect ratio, "
                     "padding with P (default 114; fit's default: stretch) (repeatable; default: seeded random inputs)")
    ver.add_argument("--layout", choices=LAYOUTS, default="onnx", help=LAYOUT_HELP)
    ver.add_argument("--input-shape", action="append", metavar="NAME=DIMS", help=SHAPE_HELP)
    ver.add_argument("--input-value", action="append", metavar="NAME=VALUES", help=VALUE_HELP)
    add_nchw_option(ver)
    ver.add_argument("--seed", type=int, default=0, help="seed for random inputs (default: 0)")
    ver.add_argument("--rtol", type=float, default=1e-3,
                     help="relative tolerance: pass where |got - ort| <= atol + rtol*|ort| (default: 1e-3)")
    ver.add_argument("--atol", type=float, default=1e-4, help="absolute tolerance (default: 1e-4)")
    ver.add_argument("--backend", choices=["interp", "ncnn", "both"], default="interp",
                     help="interp: the numpy interpreter with ncnn's semantics; ncnn: the real runtime "
                     "(pip install ncnn); both (default: interp)")
    ver.add_argument("--precision", choices=["fp32", "fp16"], default="fp32", help="fp16: as devices "
                     "run by default (fp16 storage), judged by fp16's tolerance, not --rtol/--atol (default: fp32)")
    ver.add_argument("--outputs", metavar="NAME[,NAME...]", help="check only what computes these ONNX tensors")
    ver.add_argument("--host-tail", action="store_true", help="as convert --host-tail: ncnn up to the ops it "
                     "has no layers for, the rest in onnxruntime; the whole model's outputs are compared too")
    ver.add_argument("--no-broadcast-fix", action="store_true",
                     help="skip the broadcast pass, to see what a naive conversion gets wrong")
    ver.add_argument("--json", action="store_true", help="print the report as one JSON object "
                     "(default: a table)")
    ver.add_argument("--report", metavar="FILE.html", help="write the per-layer table and an error "
                     "chart as a self-contained HTML page (or .png, with matplotlib)")
    add_int8_options(ver)
    add_block_quant_option(ver)
    add_target_option(ver)
    ver.add_argument("--ncnn-python", metavar="PATH", help="run the real ncnn backend in the ncnn this Python "
                     "imports (it needs numpy and ncnn only), e.g. a venv with the release you ship "
                     "(default: this Python's ncnn)")
    ver.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr (default: "
                     "stages of a slow run are shown when stderr is a terminal, never otherwise)")

    run = sub.add_parser("run", help="run existing .param/.bin files in the interpreter or the real ncnn")
    run.add_argument("param", help="the .param file")
    run.add_argument("bin", help="the .bin file")
    run.add_argument("--input", action="append", metavar="NAME=FILE", required=True,
                     help="an input: FILE.npy or an image with options, as for verify (repeatable)")
    run.add_argument("--layout", choices=LAYOUTS, default="onnx", help=LAYOUT_HELP + "; files without "
                     "the .json convert writes beside them: outputs as ncnn gives them")
    run.add_argument("-o", "--output", metavar="OUT.npz", help="save the outputs (default: print "
                     "their shapes and means)")
    add_run_options(run)
    return parser
