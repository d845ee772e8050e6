"""Peak memory of `onnx2ncnn convert` on decoders with external data, against the bytes it reads and
the bytes it writes: each conversion runs in a child process (the CLI, as a user runs it, prompt file
included) whose own peak resident memory (wait4's ru_maxrss) is reported.

    /work/zoo-venv/bin/python scripts/export_genai.py --big qwen2.5-0.5b -o /tmp/big
    .venv/bin/python scripts/bench_convert_memory.py /tmp/big/qwen2.5-0.5b_int4.onnx /tmp/big/qwen2.5-0.5b_fp32.onnx \
        [--block-quant int8,dequantize,keep] [--work /tmp/bench_convert_memory] [--keep-files]

Columns: the model's weight bytes (its external data file, else the .onnx), the .bin written, the peak,
peak / weight bytes, peak / .bin bytes, peak / the larger of the two (the bar a format conversion can
be held to: it must read the one and write the other), and the .bin's sha256 (a streaming change must
leave it byte for byte). A model with MatMulNBits is converted once per --block-quant choice.
The .bin is removed after each row unless --keep-files (they are GBs).
"""
from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def weight_bytes(path: Path) -> int:
    data = path.with_name(path.name + ".data")
    return data.stat().st_size if data.exists() else path.stat().st_size


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 24), b""):
            digest.update(block)
    return digest.hexdigest()


def peak_convert(model: Path, out: Path, block_quant: str) -> tuple[int, float]:
    """(peak resident bytes, seconds) of `onnx2ncnn convert` in a child process."""
    import time
    out.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "converter", "convert", str(model), "-o", str(out), "-q",
           "--block-quant", block_quant]
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as stderr:
        child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=stderr, text=True, cwd=ROOT)
        _, status, usage = os.wait4(child.pid, 0)           # this child's own peak
        if os.waitstatus_to_exitcode(status):
            stderr.seek(0)
            sys.exit(f"conversion of {model} failed: {stderr.read().strip().splitlines()[-1:]}")
    return usage.ru_maxrss * 1024, time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+", type=Path)
    ap.add_argument("--block-quant", default="int8,dequantize,keep",
                    help="the --block-quant choices for a model with MatMulNBits (comma-separated)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/bench_convert_memory"))
    ap.add_argument("--keep-files", action="store_true", help="leave the converted files in --work")
    args = ap.parse_args()
    import onnx
    print(f"{'model':28} {'mode':10} {'weights MB':>10} {'.bin MB':>8} {'peak MB':>8} {'peak/w':>6} "
          f"{'peak/bin':>8} {'peak/max':>8} {'s':>5}  .bin sha256[:16]")
    for path in args.models:
        quantized = any(n.op_type == "MatMulNBits" for n in onnx.load(path, load_external_data=False).graph.node)
        for choice in args.block_quant.split(",") if quantized else ["int8"]:
            out = args.work / f"{path.stem}_{choice}"
            peak, secs = peak_convert(path, out, choice)
            bin_ = out / f"{path.stem}.ncnn.bin"
            w, b = weight_bytes(path), bin_.stat().st_size
            print(f"{path.stem:28} {choice if quantized else '-':10} {w / 1e6:10.0f} {b / 1e6:8.0f} {peak / 1e6:8.0f} "
                  f"{peak / w:6.2f} {peak / b:8.2f} {peak / max(w, b):8.2f} {secs:5.0f}  {sha256(bin_)[:16]}",
                  flush=True)
            if not args.keep_files:
                bin_.unlink()


if __name__ == "__main__":
    main()
