"""A decoder step for a release before ncnn's LLM layers (--target-ncnn 20250503): rotary written out
(no RotaryEmbed), attention as MatMul/Softmax, the grouped heads' repeat as a Tile that release
computes right, static slices as plain Crops. Its generation in that release equals onnxruntime's,
token by token. Two facts of that release the files avoid, checked in each tested runtime: a Crop
with shape expressions (19-21) fails or crashes before 20260113, and Tile repeating the depth of a
4-D blob alone returns it untiled."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from converter.cli import main
from converter.ncnn_side.release_target import TILE_DEPTH
from converter.ncnn_side.releases import PARAMS, TESTED

DECODERS = Path(__file__).resolve().parents[2] / "models" / "decoders"
PROBE = """import sys, numpy as np, ncnn
net = ncnn.Net()
net.opt.use_packing_layout = True
net.load_param(sys.argv[1])
x = np.arange(float(np.prod(eval(sys.argv[2])))).astype(np.float32).reshape(eval(sys.argv[2]))
ex = net.create_extractor()
ex.input("in", ncnn.Mat(x).clone())
code, out = ex.extract("out")
want = eval(sys.argv[3])
print(code == 0 and np.array_equal(np.array(out), want))
"""
CASES = {   # layer, input shape, what numpy gives
    "crop": ('Crop c 1 1 in out 19="1" 20="0h" 21="1"', "(2, 5, 16)", "x[:, 1:]"),
    "tile": ("Tile t 1 1 in out -23302=4,1,3,1,1", "(2, 1, 3, 16)", "np.tile(x, (1, 3, 1, 1))"),
}


@pytest.mark.parametrize("release", TESTED)
def test_crop_expressions_and_depth_tiles_compute_from_their_release(tmp_path, runtimes, release):
    since = {"crop": PARAMS[("Crop", 19)], "tile": TILE_DEPTH}
    for case, (layer, shape, want) in CASES.items():
        param = tmp_path / f"{case}.param"
        param.write_text(f"7767517\n2 2\nInput in 0 1 in\n{layer}\n")
        done = subprocess.run([str(runtimes[release]), "-c", PROBE, str(param), shape, want],
                              capture_output=True, text=True, timeout=300)
        computed = done.returncode == 0 and done.stdout.strip() == "True"
        assert computed == (since[case] <= release), (case, done.returncode, done.stdout, done.stderr[-300:])


def test_grouped_heads_decoder_generates_in_20250503(tmp_path, runtimes, capsys):
    """llama_gqa_ts (6 heads over 2 kv heads): the script's --generate --check in pip ncnn 20250503."""
    assert main(["convert", str(DECODERS / "llama_gqa_ts.onnx"), "-o", str(tmp_path), "-q",
                 "--target-ncnn", "20250503"]) == 0
    params = (tmp_path / "llama_gqa_ts.ncnn.param").read_text() + (tmp_path / "llama_gqa_ts.ncnn.prompt.param").read_text()
    assert "RotaryEmbed" not in params and "SDPA" not in params and "Tile" in params
    done = subprocess.run([sys.executable, str(tmp_path / "llama_gqa_ts_ncnn.py"), "--generate", "8", "--prompt",
                           "5,77,140", "--check", "--ncnn-python", str(runtimes[20250503])],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and "ok: 8 tokens equal to onnxruntime's" in done.stdout, done.stdout + done.stderr


def test_a_decoder_needing_crop_expressions_is_refused_for_20250503(tmp_path, capsys):
    """Gemma3's sliding layer cuts its cache at run-time bounds (a Crop expression): no fixed size
    helps a growing cache, so the refusal names the release that computes it."""
    assert main(["convert", str(DECODERS / "gemma3_dynamo.onnx"), "-o", str(tmp_path), "--target-ncnn", "20250503"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "target 20260113 or newer" in err and "decoder" in err, err
    assert list(tmp_path.iterdir()) == []
