"""Judge an exported ONNX file the way issue 15 asks: convert it, run the files in the real ncnn
(in a child process) and in the interpreter, compare every output with onnxruntime.

Shared by scripts/peer_cases_status.py and the zoo / peer-case tests. Inputs are drawn from a
manifest's input specs (shape, dtype, and the range: `kind` ids / mask / float, or low/high)."""
from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx

from converter import convert
from converter.ir import ConversionError
from converter.ncnn_side.runtime import NcnnCrash, NcnnError, run_ncnn
from converter.ncnn_side.layout import to_ncnn


def onnxruntime_outputs(model: onnx.ModelProto, feeds: dict) -> dict[str, np.ndarray]:
    """The reference: every graph output as onnxruntime computes it."""
    import onnxruntime as ort
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds)))


@dataclass
class Verdict:
    status: str         # pass, refused, wrong, crash
    detail: str = ""


def within_tolerance(got: np.ndarray, want: np.ndarray) -> tuple[bool, str]:
    """The issue's rule, per output: |ncnn - ort| <= 1e-3 * max|ort| + 1e-3 * |ort| (NaN only where
    onnxruntime has NaN)."""
    if got.size != want.size:
        return False, f"shape {list(got.shape)} vs onnxruntime {list(want.shape)}"
    got, want = got.reshape(want.shape).astype(np.float64), want.astype(np.float64)
    same_nan = np.isnan(got) == np.isnan(want)
    got, want = np.nan_to_num(got, nan=0.0), np.nan_to_num(want, nan=0.0)
    bound = 1e-3 * np.max(np.abs(want), initial=0.0) + 1e-3 * np.abs(want)
    err = np.abs(got - want)
    ok = bool(np.all(same_nan) and np.all((err <= bound) | (got == want)))
    return ok, f"max abs error {float(np.max(err, initial=0)):.3g} (max|ort| {float(np.max(np.abs(want), initial=0)):.3g})"


def draw_input(spec: dict, rng: np.random.Generator) -> np.ndarray:
    """Values like the ones the model was exported with: token ids below the vocabulary, masks of
    0/1 kept for a random-length prefix (right padding), integers and floats within [low, high]."""
    shape, dtype = spec["shape"], np.dtype(spec["dtype"])
    low, high = spec.get("low", 0.0), spec.get("high", 1.0)
    if spec.get("kind") == "mask":
        mask = np.ones(shape, dtype)
        for row in mask.reshape(-1, shape[-1]):
            row[rng.integers(1, shape[-1] + 1):] = 0
        return mask
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(dtype)
    if dtype.kind in "iu":
        top = high if spec.get("kind") == "ids" else high + 1      # ids: [0, vocab); others [low, high]
        return rng.integers(int(low), max(int(top), int(low) + 1), shape).astype(dtype)
    return rng.uniform(low, high, shape).astype(dtype)


def draw_feeds(specs: dict[str, dict], seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {name: draw_input(spec, rng) for name, spec in specs.items()}


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"[:300]


def convert_or_verdict(model: onnx.ModelProto):
    """The conversion, or the Verdict that it refused (cleanly) or crashed (any other exception)."""
    try:
        return convert(model)
    except ConversionError as exc:
        text = str(exc)
        if "\n" in text.strip():
            return Verdict("crash", f"refusal of several lines: {first_line(exc)}")
        return Verdict("refused", text.strip())
    except Exception as exc:     # a converter bug: anything but a ConversionError
        return Verdict("crash", f"converter: {first_line(exc)}")


def judge_converted(converted, model: onnx.ModelProto, feeds_list: list[dict],
                    backends=("ncnn", "interpreter")) -> Verdict:
    with tempfile.TemporaryDirectory() as tmp:
        param, bin_ = Path(tmp) / "m.param", Path(tmp) / "m.bin"
        converted.save(param, bin_)
        io = converted.io()
        names = [e["ncnn"] for e in io["outputs"]]
        for feeds in feeds_list:
            want = onnxruntime_outputs(model, feeds)
            ncnn_feeds = {e["ncnn"]: to_ncnn(feeds[e["onnx"]], e) for e in io["inputs"]}
            for backend in backends:
                try:
                    got = (run_ncnn(param, bin_, ncnn_feeds, names) if backend == "ncnn"
                           else converted.run(ncnn_feeds, layout="ncnn"))
                except (NcnnCrash, NcnnError) as exc:
                    return Verdict("crash", f"ncnn: {first_line(exc)}")
                except Exception as exc:
                    return Verdict("crash", f"{backend}: {first_line(exc)}")
                for e in io["outputs"]:
                    reference = want[e["onnx"]]
                    reference = reference.astype(np.float64) if reference.dtype.kind in "biu" else reference
                    ok, detail = within_tolerance(np.asarray(got[e["ncnn"]]), reference)
                    if not ok:
                        return Verdict("wrong", f"{backend} output {e['onnx']}: {detail}")
    return Verdict("pass")


def judge(path: Path, specs: dict[str, dict], seeds=(0,), backends=("ncnn", "interpreter")) -> Verdict:
    model = onnx.load(str(path))
    converted = convert_or_verdict(model)
    if isinstance(converted, Verdict):
        return converted
    return judge_converted(converted, model, [draw_feeds(specs, s) for s in seeds], backends)
