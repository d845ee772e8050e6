"""Files ncnn's own converter (pnnx, taken from its wheel by scripts/fetch_models.py) writes for real
models, run by the interpreter (`load_ncnn(...).run`) against the real ncnn runtime."""
import shutil
import subprocess

import numpy as np
import pytest

from converter import load_ncnn
from converter.ncnn_side.runtime import run_ncnn
from scripts.fetch_models import fetch

from .real_check import within_tolerance

CASES = [("yolov8n_320", [1, 3, 320, 320]), ("ppocrv4_det", [1, 3, 320, 320]), ("ppocr_mobile_cls", [1, 3, 48, 192]),
         ("ppocrv5_rec", [1, 3, 48, 160])]


def pnnx_files(name: str, shape: list[int], folder):
    """Run pnnx on the cached model in `folder`; returns the .param and .bin it wrote."""
    model = folder / f"{name}.onnx"
    shutil.copy(fetch(name), model)
    result = subprocess.run([str(fetch("pnnx")), model.name, f"inputshape=[{','.join(map(str, shape))}]"],
                            cwd=folder, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    return folder / f"{name}.ncnn.param", folder / f"{name}.ncnn.bin"


@pytest.mark.parametrize("name,shape", CASES, ids=[c[0] for c in CASES])
def test_run_matches_the_real_runtime_on_pnnx_files(tmp_path, name, shape):
    param, bin_ = pnnx_files(name, shape, tmp_path)
    model = load_ncnn(param, bin_)
    x = np.random.default_rng(0).uniform(0, 1, shape[1:]).astype(np.float32)
    ours = model.run({"in0": x})
    real = run_ncnn(param, bin_, {"in0": x}, list(ours))
    for blob, value in ours.items():
        ok, detail = within_tolerance(value, real[blob])
        assert ok, f"{name} {blob}: {detail}"
