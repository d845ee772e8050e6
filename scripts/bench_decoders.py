"""Prefill and per-token decode time of converted decoder steps in real ncnn against onnxruntime on the
same ONNX file, both on 1 thread (a benchmark: prints times and ratios, asserts nothing):

    .venv/bin/python scripts/bench_decoders.py [MODEL.onnx ...] [--prompt 32,128] [--tokens 8] \
        [--rounds 5] [--clock cpu] [--work DIR [--reuse]] [--before DIR]

Each model is converted (`onnx2ncnn convert`, in a child process) into --work (a temporary folder by
default; with --reuse, files already there are timed as they are). A round runs, in each runtime,
one greedy generation per --prompt length (the prompt file convert writes beside the decode file takes
the prompt, converter/generation.py): the first call is that length's prefill time; after the longest
prompt, --tokens tokens are decoded one call each and the round's decode time is their median. Rounds
alternate the runtimes (the machine may be shared and noisy); min / median over rounds are printed, and
the ratios ncnn / onnxruntime of the mins and of the medians. `--clock cpu` times this process's CPU
time (which leaves out waiting for a core); `--before DIR` also times the files an earlier run (an older
checkout) left in DIR, in the same rounds. ncnn runs with its fp16 and bf16 options off, as verify's
fp32 does. The times include each runtime's feeding and fetching (numpy to Mat and back, the cache too).
Default models: models/decoders/*_ts.onnx."""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from converter.generation import decoder_io, greedy, onnxruntime_step, pair_step, prompt_file, read_record  # noqa: E402
from converter.ncnn_side.layout import to_ncnn, to_onnx  # noqa: E402

CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


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


def ncnn_files(param: Path):
    """(step, io, layer count) of a decode file and the prompt file beside it."""
    bin_ = param.with_suffix(".bin")
    record = read_record(param)
    layout = decoder_io(record)
    first = prompt_file(param)
    step = pair_step(ncnn_in_process(first, bin_, read_record(first)), ncnn_in_process(param, bin_, record), layout)
    return step, layout, int(param.read_text().splitlines()[1].split()[0])


def convert(path: Path, work: Path, reuse: bool) -> Path:
    param = work / f"{path.stem}.ncnn.param"
    if reuse and param.exists() and prompt_file(param) is not None:
        return param
    done = subprocess.run([str(Path(sys.executable).with_name("onnx2ncnn")), "convert", str(path), "-o", str(work), "-q"],
                          capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"{path}: conversion failed: {done.stderr.strip().splitlines()[-1:]}")
    return param


def timed(step, clock):
    times = []

    def run(feeds):
        start = clock()
        out = step(feeds)
        times.append(clock() - start)
        return out
    return run, times


def one_round(step, layout, prompt, lengths, tokens, clock) -> tuple[dict, list[int]]:
    """{'prefill P': s, 'decode': s} of one round, and the decoded tokens."""
    got = {}
    for length in lengths:
        run, times = timed(step, clock)
        generated = greedy(run, layout, prompt[:length], 1 + tokens if length == lengths[-1] else 1)
        got[f"prefill {length}"] = times[0]
    got["decode"] = statistics.median(times[1:])
    return got, generated.tokens


def bench(path: Path, rows: dict, lengths, tokens, rounds, clock) -> tuple[dict, dict]:
    """label -> measure -> [seconds per round], and label -> tokens of the first round, for onnxruntime
    and each labelled ncnn decode file in `rows`."""
    steps = {"ort": (onnxruntime_step(path), None)}
    steps.update({label: ncnn_files(param)[:2] for label, param in rows.items()})
    layout = next(io for _, io in steps.values() if io is not None)
    steps["ort"] = (steps["ort"][0], layout)
    prompt = [int(t) for t in np.random.default_rng(0).integers(3, 256, max(lengths))]     # ids any vocabulary has
    for step, io in steps.values():
        greedy(step, io, prompt[:4], 2)                                                   # warm-up
    times = {label: {} for label in steps}
    tokens_of = {}
    order = list(steps)
    for r in range(rounds):
        for label in order if r % 2 == 0 else order[::-1]:                              # alternate who goes first
            got, toks = one_round(*steps[label], prompt, lengths, tokens, clock)
            tokens_of.setdefault(label, toks)
            for k, v in got.items():
                times[label].setdefault(k, []).append(v)
    return times, tokens_of


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", type=Path)
    ap.add_argument("--prompt", default="32,128", help="prompt lengths (prefill times); decoding follows the longest")
    ap.add_argument("--tokens", type=int, default=8, help="tokens decoded per round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                    help="cpu: this process's CPU time, which leaves out waiting for a core on a shared machine")
    ap.add_argument("--work", type=Path, help="folder for the converted files (default: a temporary one)")
    ap.add_argument("--reuse", action="store_true", help="time the files already in --work")
    ap.add_argument("--before", type=Path, metavar="DIR", help="also time the files an earlier run left in DIR")
    args = ap.parse_args(argv)
    lengths = sorted(int(n) for n in args.prompt.split(","))
    models = args.models or sorted((ROOT / "models" / "decoders").glob("*_ts.onnx"))
    print(f"1 thread; decode: median of {args.tokens} tokens after a {lengths[-1]}-token prompt; "
          f"min / median of {args.rounds} alternating rounds, ms of {args.clock} time; ratio = ncnn / onnxruntime")
    measures = ["decode"] + [f"prefill {n}" for n in lengths]
    print(f"{'model':30} {'layers':>6} " + " ".join(f"{m + ' ort':>17} {m + ' ncnn':>17} {'ratio':>9}" for m in measures)
          + " tokens")
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for path in models:
            param = convert(path, work, args.reuse)
            rows = {"": param}
            if args.before is not None:
                rows["  before"] = args.before / param.name
            times, tokens_of = bench(path, rows, lengths, args.tokens, args.rounds, CLOCKS[args.clock])
            for label, p in rows.items():
                ort, ours = times["ort"], times[label]
                cells = []
                for m in measures:
                    a, b = ort[m], ours[m]
                    cells.append(f"{min(a) * 1e3:8.2f}/{statistics.median(a) * 1e3:8.2f} "
                                 f"{min(b) * 1e3:8.2f}/{statistics.median(b) * 1e3:8.2f} "
                                 f"{min(b) / min(a):4.2f}/{statistics.median(b) / statistics.median(a):4.2f}")
                same = "equal" if tokens_of[label] == tokens_of["ort"] else "DIFFER"
                layers = p.read_text().splitlines()[1].split()[0]
                print(f"{(label or path.stem):30} {layers:>6} " + " ".join(cells) + f" {same}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
