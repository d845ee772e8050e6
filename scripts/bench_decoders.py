"""Per-token decode time of converted decoder steps in real ncnn against onnxruntime on the same
ONNX file, both on 1 thread (a benchmark: prints times and ratios, asserts nothing):

    .venv/bin/python scripts/bench_decoders.py [MODEL.onnx ...] [--prompt 64] [--tokens 32]

Each model is converted to a temporary folder; both runtimes prefill the same prompt (ncnn in the
prompt file convert writes beside the decode file, converter/generation.py) and then decode --tokens tokens
greedily; the decode calls are timed one by one and the median is reported, with the prefill time.
Default models: models/decoders/*_ts.onnx."""
from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from converter.cli import main as onnx2ncnn  # noqa: E402
from converter.generation import decoder_io, greedy, onnxruntime_step, pair_step, prompt_file, read_record  # noqa: E402
from converter.ncnn_side.layout import to_ncnn, to_onnx  # noqa: E402


def ncnn_in_process(param, bin_, record):
    import ncnn
    net = ncnn.Net()
    for opt in ("use_fp16_storage", "use_fp16_arithmetic", "use_fp16_packed", "use_bf16_storage"):
        setattr(net.opt, opt, False)
    net.opt.num_threads = 1
    if net.load_param(str(param)) != 0 or net.load_model(str(bin_)) != 0:
        raise RuntimeError(f"ncnn could not load {param}")
    entries = {e["onnx"]: e for e in record["inputs"]}

    def run(feeds):
        ex = net.create_extractor()
        for name, value in feeds.items():
            if name in entries:
                array = np.ascontiguousarray(to_ncnn(value, entries[name]))
                ex.input(entries[name]["ncnn"], ncnn.Mat(array).clone())
        out = {}
        for e in record["outputs"]:
            code, mat = ex.extract(e["ncnn"])
            if code != 0:
                raise RuntimeError(f"ncnn failed on {e['ncnn']}")
            out[e["onnx"]] = to_onnx(np.array(mat).copy(), e)
        return out
    return run


def timed(step):
    times = []

    def run(feeds):
        start = time.perf_counter()
        out = step(feeds)
        times.append(time.perf_counter() - start)
        return out
    return run, times


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", type=Path)
    ap.add_argument("--prompt", type=int, default=64, help="prompt length (the cache length decoding starts at)")
    ap.add_argument("--tokens", type=int, default=32)
    args = ap.parse_args(argv)
    models = args.models or sorted((ROOT / "models" / "decoders").glob("*_ts.onnx"))
    prompt = [int(t) for t in np.random.default_rng(0).integers(3, 256, args.prompt)]     # the models' vocabulary is 256
    print(f"{'model':24} {'layers':>6} {'ncnn ms/token':>13} {'ort ms/token':>12} {'ratio':>6} "
          f"{'ncnn prefill ms':>15} {'ort prefill ms':>14} tokens")
    with tempfile.TemporaryDirectory() as tmp:
        for path in models:
            with contextlib.redirect_stdout(io.StringIO()):      # its summary lines
                converted = onnx2ncnn(["convert", str(path), "-o", tmp, "-q"])
            if converted:
                return 2
            param, bin_ = Path(tmp) / f"{path.stem}.ncnn.param", Path(tmp) / f"{path.stem}.ncnn.bin"
            record = read_record(param)
            layout = decoder_io(record)
            first = prompt_file(param)
            ncnn_step = pair_step(ncnn_in_process(first, bin_, read_record(first)), ncnn_in_process(param, bin_, record), layout)
            runs = {}
            for name, step in (("ncnn", ncnn_step), ("ort", onnxruntime_step(path))):
                greedy(step, layout, prompt[:4], 2)          # warm up
                run, times = timed(step)
                generated = greedy(run, layout, prompt, args.tokens)
                runs[name] = (statistics.median(times[1:]) * 1e3, times[0] * 1e3, generated.tokens)
            same = "equal" if runs["ncnn"][2] == runs["ort"][2] else "DIFFER"
            print(f"{path.stem:24} {param.read_text().splitlines()[1].split()[0]:>6} {runs['ncnn'][0]:>13.3f} {runs['ort'][0]:>12.3f} "
                  f"{runs['ncnn'][0] / runs['ort'][0]:>6.2f} {runs['ncnn'][1]:>15.2f} {runs['ort'][1]:>14.2f} {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
