"""int8 from a float model: calibrate with onnxruntime.quantization, then convert the QDQ model it writes.

`--calibrate INPUTS...`: images (a folder of them, or image files; verify's image options after ':',
e.g. `photos/:size=224x224,mean=0.485,0.456,0.406,std=0.229,0.224,0.225`), or .npy files (a folder of
them, or files), one sample each, for a model with one float input. quantize_static writes the form
ncnn's int8 layers take (passes/plan_int8.py): QDQ, symmetric int8 activations (zero point 0), int8
weights per output channel with symmetric ranges; onnxruntime's pre-processing folds BatchNorm into
Conv first. A progress line on stderr counts the calibration samples as onnxruntime reads them.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Callable

import numpy as np
import onnx

from converter.verification.image_input import IMAGE_SUFFIXES, parse_image_spec
from .ir import ConversionError
from converter.onnx_side.loader import read_model


def _samples(items: list[str]) -> list[tuple[Path, str]]:
    """(file, image options) of every sample named: folders give their images and .npy files, sorted."""
    found = []
    for text in items:
        path_text, _, options = text.partition(":")
        path = Path(path_text)
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if p.is_file() and
                           (p.suffix.lower() in IMAGE_SUFFIXES or p.suffix.lower() == ".npy"))
            if not files:
                raise ConversionError(f"--calibrate: folder {path} has no images or .npy files")
            found += [(p, options) for p in files]
        elif path.is_file() and (path.suffix.lower() in IMAGE_SUFFIXES or path.suffix.lower() == ".npy"):
            found.append((path, options))
        else:
            raise ConversionError(f"--calibrate: {text} is not a folder, an image or a .npy file")
    return found


def _float_input(proto: onnx.ModelProto) -> tuple[str, list]:
    initializers = {t.name for t in proto.graph.initializer}
    inputs = [vi for vi in proto.graph.input if vi.name not in initializers]
    if len(inputs) != 1 or inputs[0].type.tensor_type.elem_type != onnx.TensorProto.FLOAT:
        names = ", ".join(vi.name for vi in inputs)
        raise ConversionError(f"--calibrate needs a model with one float input (one sample per file); this "
                              f"model's inputs are {names}")
    dims = inputs[0].type.tensor_type.shape.dim
    return inputs[0].name, [d.dim_value if d.HasField("dim_value") else None for d in dims]


def load_sample(path: Path, options: str, name: str, shape: list) -> np.ndarray:
    if path.suffix.lower() == ".npy":
        try:
            array = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise ConversionError(f"--calibrate: cannot read {path}: {exc}") from None
    else:
        array = parse_image_spec(name, f"{path}:{options}" if options else str(path)).to_array(name, shape)
    if len(array.shape) != len(shape) or any(d and d != a for d, a in zip(shape, array.shape)):
        raise ConversionError(f"--calibrate: {path} gives shape {list(array.shape)}, the input {name} takes {shape}")
    return np.ascontiguousarray(array, np.float32)


def quantize(model_path: str, items: list[str], target: Path, progress: Callable[[str], None] | None = None,
             input_shapes: dict | None = None) -> None:
    """Write the QDQ int8 model calibrated on `items` to `target`."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    proto, _ = read_model(model_path)
    name, shape = _float_input(proto)
    shape = list((input_shapes or {}).get(name, shape))
    samples = _samples(items)
    show = progress or (lambda text: None)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.position = 0

        def get_next(self):
            if self.position == len(samples):
                return None
            path, options = samples[self.position]
            self.position += 1
            show(f"calibrating: {self.position}/{len(samples)} {path.name}")
            return {name: load_sample(path, options, name, shape)}

    with tempfile.TemporaryDirectory() as tmp:
        prepared = Path(tmp) / "prepared.onnx"
        try:
            quant_pre_process(str(model_path), str(prepared), skip_symbolic_shape=True)
            quantize_static(str(prepared), str(target), Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                            activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                            extra_options={"ActivationSymmetric": True, "WeightSymmetric": True})
        except ConversionError:
            raise
        except Exception as exc:       # onnxruntime's refusal, in its words, as our one line
            raise ConversionError(f"onnxruntime.quantization cannot quantize the model: "
                                  f"{' '.join(str(exc).split())[:300]}") from None


class ProgressLine:
    """One line on stderr rewritten in place (a terminal) as calibration goes; nothing otherwise."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        self.shown = False

    def __call__(self, text: str) -> None:
        if self.stream.isatty():
            print(f"\r{text}\033[K", end="", file=self.stream, flush=True)
            self.shown = True

    def done(self) -> None:
        if self.shown:
            print(file=self.stream, flush=True)


def int8_mode(args) -> str:
    """--int8 as given; else fast for a model --calibrate quantizes (no QDQ spec to match bit for bit,
    speed is the point), exact for a quantized model given (its Q/DQ pairs are the spec)."""
    return args.int8 or ("fast" if args.calibrate else "exact")


def calibrated(model: str, items: list[str], folder: str, input_shapes: dict, show: bool = True) -> str:
    """The QDQ int8 model onnxruntime.quantization makes of `model` calibrated on `items`, in `folder`."""
    target = Path(folder) / Path(model).name
    line = ProgressLine() if show else None
    try:
        quantize(model, items, target, line, input_shapes)
    finally:
        if line is not None:
            line.done()
    return str(target)


def add_int8_options(command) -> None:
    """convert's and verify's --int8 and --calibrate."""
    command.add_argument("--int8", choices=["exact", "fast"], help="a quantized model's int8: exact emulates "
                         "every activation Q/DQ pair (onnxruntime's int8 values), fast drops those that feed no "
                         "int8 layer, as ncnn's own int8 tools do (faster; tensors between int8 layers stay "
                         "float) (default: exact for a quantized model, fast with --calibrate)")
    command.add_argument("--calibrate", nargs="+", metavar="INPUTS", help="quantize a float model to int8 first "
                         "(onnxruntime.quantization, QDQ, symmetric int8), calibrated on INPUTS: folders or "
                         "files of images (options as for --input after ':', e.g. photos/:size=224x224,"
                         "mean=0.485,0.456,0.406,std=0.229,0.224,0.225) or .npy arrays, one sample each")
