"""Files for each ncnn release, run in that release (issue 25).

Every model is converted for each tested release (--target-ncnn) and for the newest one; its files
must need no release newer than the target (ncnn_min_version) and, in the release they were written
for and the oldest tested release that minimum claims, load and match onnxruntime (|ncnn - ort| <= 1e-3 max|ort| + 1e-3 |ort| per output,
the real-model rule). The runtimes are pip environments the set-up builds (tests/releases/runtimes.py).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from converter import convert
from converter.ncnn_side.releases import NEWEST, TESTED
from converter.ncnn_side.runtime import run_ncnn
from onnx_cases import fed_inputs, onnxruntime_outputs, to_ncnn
from scripts.fetch_models import fetch

from real_models.real_check import within_tolerance
from real_models.test_vision_models import text_image

MODELS_DIR = Path(__file__).resolve().parents[2] / "models"
BUNDLED = sorted(p.stem for p in MODELS_DIR.glob("*.onnx"))
# real models: (fetch name, --input-shape, inputs made by)
REAL = {"yolov8n_320": ({}, None), "ppocrv4_det": ({}, text_image),
        "ppocrv4_rec": ({"x": [1, 3, 48, None]}, None), "captcha_crnn": ({}, None)}


def model_path(name: str) -> Path:
    return MODELS_DIR / f"{name}.onnx" if name in BUNDLED else fetch(name)


def feeds_for(model: onnx.ModelProto, shapes: dict[str, list[int]], make_feeds) -> dict[str, np.ndarray]:
    """Image-like inputs in [0, 1), other floats in [-1, 1), integers (token ids) in [0, 4)."""
    if make_feeds is not None:
        return make_feeds(shapes, 0)
    rng = np.random.default_rng(0)
    feeds = {}
    for vi in fed_inputs(model):
        dtype = onnx.helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type)
        shape = shapes[vi.name]
        if np.dtype(dtype).kind == "f":
            low = 0.0 if len(shape) == 4 else -1.0
            feeds[vi.name] = rng.uniform(low, 1.0, shape).astype(dtype)
        else:
            feeds[vi.name] = rng.integers(0, 4, shape).astype(dtype)
    return feeds


@pytest.mark.parametrize("target", [*TESTED[:-1], None], ids=lambda t: str(t or "newest"))
@pytest.mark.parametrize("name", [*BUNDLED, *REAL])
def test_files_run_in_their_releases(tmp_path, runtimes, name, target):
    input_shapes, make_feeds = REAL.get(name, ({}, None))
    path = model_path(name)
    converted = convert(path, input_shapes or None, target_ncnn=target)
    needed = converted.stats["ncnn_min_version"]
    assert needed <= (target or NEWEST)
    param, bin_ = tmp_path / "m.param", tmp_path / "m.bin"
    converted.save(param, bin_)
    io = converted.io()
    shapes = {e["onnx"]: converted.stats["example_shapes"].get(e["onnx"], e["onnx_shape"]) for e in io["inputs"]}
    model = onnx.load(str(path))
    feeds = feeds_for(model, shapes, make_feeds)
    want = onnxruntime_outputs(model, feeds)
    ncnn_feeds = {e["ncnn"]: to_ncnn(feeds[e["onnx"]], e) for e in io["inputs"]}
    failures, ran = [], []
    # the oldest tested release the record claims, and the one the files were written for (the releases
    # between them read the same layers: running each file there too cost a minute of the suite)
    oldest_claimed = next(r for r in TESTED if r >= needed)
    for release in sorted({oldest_claimed, target or TESTED[-1]}):
        got = run_ncnn(param, bin_, ncnn_feeds, [e["ncnn"] for e in io["outputs"]], python=str(runtimes[release]))
        ran.append(release)
        for e in io["outputs"]:
            ok, detail = within_tolerance(got[e["ncnn"]], want[e["onnx"]])
            if not ok:
                failures.append(f"ncnn {release}: {e['onnx']}: {detail}")
    assert target is None or target in ran        # the files load in the release they were written for
    assert not failures, "\n".join(failures)
