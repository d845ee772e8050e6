"""Convert a real exported model once, run the files in the real ncnn and in the interpreter,
and compare every output with onnxruntime at one or more input sizes."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx

from converter import convert
from converter.ncnn_side.runtime import run_ncnn
from onnx_cases import fed_inputs, onnxruntime_outputs, to_ncnn
from scripts.fetch_models import fetch

from .bin_budget import assert_bin_within_weights


def within_tolerance(got: np.ndarray, want: np.ndarray) -> tuple[bool, str]:
    """The issue's rule, per output: |ncnn - ort| <= 1e-3 * max|ort| + 1e-3 * |ort|."""
    if got.size != want.size:
        return False, f"shape {list(got.shape)} vs onnxruntime {list(want.shape)}"
    got = got.reshape(want.shape).astype(np.float64)
    want = want.astype(np.float64)
    bound = 1e-3 * np.max(np.abs(want), initial=0.0) + 1e-3 * np.abs(want)
    err = np.abs(got - want)
    worst = float(np.max(err - bound, initial=-1.0))
    return bool(np.all(err <= bound)), f"max abs error {float(np.max(err, initial=0)):.3g}, worst excess {worst:.3g}"


def redeclared(model: onnx.ModelProto, shapes: dict[str, list]) -> onnx.ModelProto:
    """The model with fixed declared input dims replaced by `shapes` (None leaves a dim), so that
    onnxruntime accepts the sizes --input-shape gave the converter (CenterFace declares 10x3x32x32)."""
    for vi in model.graph.input:
        for dim, size in zip(vi.type.tensor_type.shape.dim, shapes.get(vi.name, [])):
            if size is not None and dim.HasField("dim_value") and dim.dim_value != size:
                dim.dim_value = size
    return model


def feeds_for(model: onnx.ModelProto, shapes: dict[str, list[int]], seed: int,
              value_range: tuple[float, float] | None = None) -> dict[str, np.ndarray]:
    """Image-like inputs in [0, 1) (what preprocessed photos look like), other floats in [-1, 1);
    inputs not in `shapes` take their declared (static) shape."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for vi in fed_inputs(model):
        declared = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        shape = shapes.get(vi.name, declared)
        low, high = value_range or ((0.0, 1.0) if len(shape) == 4 else (-1.0, 1.0))
        feeds[vi.name] = rng.uniform(low, high, shape).astype(np.float32)
    return feeds


def check_real_model(name: str, sizes: list[dict[str, list[int]]], tmp_path: Path,
                     input_shapes: dict[str, list[int]] | None = None,
                     backends: tuple[str, ...] = ("ncnn", "interpreter"),
                     value_range: tuple[float, float] | None = None, make_feeds=None, **convert_args):
    """One conversion (with `input_shapes` fixed, else dynamic), checked at every size in `sizes`;
    inputs are random (in `value_range`) unless `make_feeds(shapes, seed)` makes them."""
    path = fetch(name)
    model = redeclared(onnx.load(str(path)), input_shapes or {})
    converted = convert(path, input_shapes=input_shapes, **convert_args)
    assert_bin_within_weights(name, converted, listed=not convert_args.get("share_weights"))
    param, bin_ = tmp_path / f"{name}.param", tmp_path / f"{name}.bin"
    converted.save(param, bin_)
    io = converted.io()
    failures = []
    for k, shapes in enumerate(sizes):
        feeds = (make_feeds(shapes, k) if make_feeds is not None else
                 feeds_for(model, shapes, seed=k, value_range=value_range))
        want = onnxruntime_outputs(model, feeds)
        ncnn_feeds = {e["ncnn"]: to_ncnn(feeds[e["onnx"]], e) for e in io["inputs"]}
        outputs = [e["ncnn"] for e in io["outputs"]]
        results = {"ncnn": lambda: run_ncnn(param, bin_, ncnn_feeds, outputs),
                   "interpreter": lambda: converted.run(ncnn_feeds, layout="ncnn")}
        computed = {b: results[b]() for b in backends}
        for e in io["outputs"]:
            for backend, got in ((b, computed[b][e["ncnn"]]) for b in backends):
                ok, detail = within_tolerance(got, want[e["onnx"]])
                if not ok:
                    failures.append(f"{name} at {shapes}: {backend} output {e['onnx']}: {detail}")
    assert not failures, "\n".join(failures)
    return converted


def converted_run(converted, param, bin_, backend: str):
    """`run(feeds) -> outputs` by ONNX names, through the saved files in the real ncnn or the interpreter."""
    io = converted.io()

    def run(feeds):
        ncnn_feeds = {e["ncnn"]: to_ncnn(feeds[e["onnx"]], e) for e in io["inputs"]}
        outs = [e["ncnn"] for e in io["outputs"]]
        got = run_ncnn(param, bin_, ncnn_feeds, outs) if backend == "ncnn" else converted.run(ncnn_feeds, layout="ncnn")
        return {e["onnx"]: np.array(got[e["ncnn"]]) for e in io["outputs"]}
    return run
