"""Decoder speed and conversion memory: our files in the real ncnn runtime against onnxruntime on the
same ONNX model (onnxruntime-genai builder output, scripts/export_genai.py), one thread each,
alternating rounds; prints per-token decode time, prompt time and the ratios.

    /work/zoo-venv/bin/python scripts/export_genai.py --big qwen2.5-0.5b -o /tmp/big
    .venv/bin/python scripts/bench_decoder.py /tmp/big/qwen2.5-0.5b_fp32.onnx /tmp/big/qwen2.5-0.5b_int4.onnx \
        [--past 128] [--prompt 32] [--rounds 5] [--work /tmp/bench] [--reuse] [--block-quant int8,dequantize,keep] \
        [--any-length] [--before DIR] [--clock wall|cpu]

A model with MatMulNBits is converted once per --block-quant choice (rows "<model> [choice]"); the
"logits dev" column is the largest difference of the decode step's logits from onnxruntime's, over
their largest magnitude.

Each model is first converted in a child process (a prompt file with the past removed, a decode
file with a run-time past and one new token, `input_ids` 1 x 1) whose peak resident memory is reported
against the model's weight bytes. At one token the projections are InnerProducts (ncnn's one-row kernel;
the prompt file's run-time row count keeps Gemm); `--any-length` also converts the decode file with a
run-time token count (Gemm projections, the form that also takes a chunk of tokens) and times it in the
same rounds; `--before DIR` times the files an earlier run (an older checkout) left in DIR in the same
rounds too: a before/after on a shared machine. `--clock cpu` times this process's CPU time, which leaves
out waiting for a core. ncnn runs with its fp16 and bf16 options off, as verify's fp32 does: with ncnn's
defaults, x86 InnerProduct would keep its weights in fp16.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CONVERT = """
import sys, json, converter
path, out, shapes, block_quant = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
model = converter.convert(path, input_shapes=shapes or None, block_quant=block_quant)
model.save(out + ".ncnn.param", out + ".ncnn.bin")
print(json.dumps(model.io()))
"""


def weight_bytes(path: Path) -> int:
    data = path.with_name(path.name + ".data")
    return data.stat().st_size if data.exists() else path.stat().st_size


def convert(path: Path, out: Path, shapes: dict, reuse: bool = False,
            block_quant: str = "int8") -> tuple[dict, float, float]:
    """(io record, seconds, peak resident MB) of one conversion in a child process; with `reuse`,
    the files of an earlier run (no conversion, nothing measured)."""
    record = out.with_name(out.name + ".io.json")
    if reuse and record.exists():
        return json.loads(record.read_text()), 0.0, float("nan")
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr:
        child = subprocess.Popen([sys.executable, "-c", CONVERT, str(path), str(out), json.dumps(shapes), block_quant],
                                 stdout=stdout, stderr=stderr, text=True, cwd=ROOT)
        _, status, usage = os.wait4(child.pid, 0)             # this child's own peak, not the largest so far
        stdout.seek(0), stderr.seek(0)
        if os.waitstatus_to_exitcode(status):
            sys.exit(f"conversion of {path} failed: {stderr.read().strip().splitlines()[-1:]}")
        peak = usage.ru_maxrss / 1024
        record.write_text(stdout.read().strip().splitlines()[-1])
    return json.loads(record.read_text()), time.perf_counter() - start, peak


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


class NcnnDecoder:
    def __init__(self, stem: Path, io: dict, clock=time.perf_counter):
        import ncnn
        self.net = ncnn.Net()
        self.net.opt.num_threads = 1
        for opt in ("use_fp16_storage", "use_fp16_arithmetic", "use_fp16_packed", "use_bf16_storage"):
            setattr(self.net.opt, opt, False)       # fp32: x86 InnerProduct would otherwise hold fp16 weights
        self.net.load_param(str(stem) + ".ncnn.param")
        self.net.load_model(str(stem) + ".ncnn.bin")
        self.io = io
        self.ncnn = ncnn
        self.clock = clock

    def run(self, feeds: dict, keep: dict | None = None) -> float:
        """Seconds of one extraction of every output; `keep` receives the logits."""
        from converter.ncnn_side.layout import to_ncnn
        ins = {e["onnx"]: e for e in self.io["inputs"]}
        mats = {ins[k]["ncnn"]: self.ncnn.Mat(np.ascontiguousarray(to_ncnn(v, ins[k]))).clone()
                for k, v in feeds.items() if k in ins}
        start = self.clock()
        ex = self.net.create_extractor()
        for name, mat in mats.items():
            ex.input(name, mat)
        for e in self.io["outputs"]:
            ret, mat = ex.extract(e["ncnn"])
            if ret:
                sys.exit(f"ncnn failed extracting {e['ncnn']}")
            if keep is not None and e["onnx"] == "logits":
                keep["logits"] = np.array(mat)
        return self.clock() - start


def bench(path: Path, work: Path, past: int, prompt: int, rounds: int, reuse: bool = False,
          block_quant: str = "int8", any_length: bool = False, clock=time.perf_counter,
          before: Path | None = None) -> dict:
    """Times (ms) and logits deviations of the decode and prompt files and of the extra rows (label ->
    (decode stem or None, prompt stem or None)): --any-length's file, --before's files."""
    import onnx
    import onnxruntime as ort
    cfg = json.loads(path.with_name(path.name.replace(".onnx", ".genai_config.json")).read_text())["model"]
    groups, dim = cfg["decoder"]["num_key_value_heads"], cfg["decoder"]["head_size"]
    pasts = [i.name for i in onnx.load(path, load_external_data=False).graph.input if i.name.startswith("past")]
    work.mkdir(parents=True, exist_ok=True)
    stem = f"{path.stem}_{block_quant}"
    io_dec, secs_dec, peak_dec = convert(path, work / f"{stem}_decode", {"input_ids": [1, 1]}, reuse, block_quant)
    io_pre, secs_pre, peak_pre = convert(path, work / f"{stem}_prompt", {pasts[0]: [1, groups, 0, dim]}, reuse,
                                         block_quant)
    extras = {}
    if any_length:
        convert(path, work / f"{stem}_decode_any", {}, reuse, block_quant)
        extras["decode file at any length"] = (work / f"{stem}_decode_any", None)
    if before is not None:
        extras[f"before: {before}"] = (before / f"{stem}_decode", before / f"{stem}_prompt")

    def load(s):
        return None if s is None else NcnnDecoder(s, json.loads(s.with_name(s.name + ".io.json").read_text()), clock)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    rows = {"": (NcnnDecoder(work / f"{stem}_decode", io_dec, clock),
                 NcnnDecoder(work / f"{stem}_prompt", io_pre, clock)),
            **{label: (load(d), load(p)) for label, (d, p) in extras.items()}}
    rng = np.random.default_rng(0)
    cache = {p: rng.standard_normal((1, groups, past, dim)).astype(np.float32) for p in pasts}
    empty = {p: np.zeros((1, groups, 0, dim), np.float32) for p in pasts}
    vocab = cfg["vocab_size"]
    one = rng.integers(0, vocab, (1, 1)).astype(np.int64)
    many = rng.integers(0, vocab, (1, prompt)).astype(np.int64)
    feeds_dec = {"input_ids": one, "attention_mask": np.ones((1, past + 1), np.int64), **cache}
    feeds_pre = {"input_ids": many, "attention_mask": np.ones((1, prompt), np.int64), **empty}

    def ort_time(feeds, keep=None):
        start = clock()
        out = sess.run(["logits"], feeds)
        if keep is not None:
            keep["logits"] = out[0]
        return clock() - start

    def ncnn_feeds(feeds):
        return {k: (v.astype(np.float32) if k == "attention_mask" else v) for k, v in feeds.items()}
    dec_feeds = ncnn_feeds(feeds_dec)
    pre_feeds = ncnn_feeds({k: v for k, v in feeds_pre.items() if k not in pasts})
    times = {"ort_decode": [], "ort_prompt": [], **{f"{label}:{k}": [] for label in rows for k in ("decode", "prompt")}}
    ref, logits = {}, {}
    ort_time(feeds_dec, ref)                                            # warm-up, and the logits compared
    for label, (dec, _) in rows.items():
        if dec is not None:
            logits[label] = {}
            dec.run(dec_feeds, logits[label])
    for _ in range(rounds):                                             # alternating rounds
        times["ort_decode"].append(ort_time(feeds_dec))
        for label, (dec, _) in rows.items():
            if dec is not None:
                times[f"{label}:decode"].append(dec.run(dec_feeds))
        times["ort_prompt"].append(ort_time(feeds_pre))
        for label, (_, pre) in rows.items():
            if pre is not None:
                times[f"{label}:prompt"].append(pre.run(pre_feeds))
    result = {k: statistics.median(v) * 1e3 for k, v in times.items() if v}
    result.update({f"{k}_min": min(v) * 1e3 for k, v in times.items() if v})
    ref_logits = ref["logits"].reshape(-1)
    for label, got in logits.items():
        ours = got["logits"].reshape(-1)
        result[f"{label}:dev"] = float(np.abs(ours - ref_logits).max() / np.abs(ref_logits).max())
        result[f"{label}:same_token"] = int(ours.argmax() == ref_logits.argmax())
    result.update(weights_mb=weight_bytes(path) / 1e6, peak_mb=max(peak_dec, peak_pre),
                  convert_s=secs_dec + secs_pre, rows=list(rows))
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+", type=Path)
    ap.add_argument("--past", type=int, default=128)
    ap.add_argument("--prompt", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--work", type=Path, default=Path("/tmp/bench_decoder"))
    ap.add_argument("--reuse", action="store_true", help="time the files an earlier run converted")
    ap.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                    help="cpu: this process's CPU time, which leaves out waiting for a core on a shared machine")
    ap.add_argument("--before", type=Path, metavar="DIR",
                    help="also time the decode and prompt files an earlier run (an older checkout) left in DIR")
    ap.add_argument("--any-length", action="store_true",
                    help="also time a decode file with a run-time token count (the Gemm form) in the same rounds")
    ap.add_argument("--block-quant", default="int8,dequantize,keep",
                    help="the convert --block-quant choices to time for a model with MatMulNBits (comma-separated)")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    print(f"1 thread; decode: 1 token on a past of {args.past}; prompt: {args.prompt} tokens; "
          f"min / median of {args.rounds} alternating rounds (ms of {args.clock} time)")
    print(f"{'model':34} {'ort dec':>11} {'ncnn dec':>11} {'ratio':>9} {'ort pre':>11} {'ncnn pre':>11} "
          f"{'ratio':>9} {'logits dev':>10} {'token':>5} {'.bin MB':>7} {'conv peak/w':>11}")
    for path in args.models:
        import onnx
        quantized = any(n.op_type == "MatMulNBits" for n in onnx.load(path, load_external_data=False).graph.node)
        for choice in args.block_quant.split(",") if quantized else ["int8"]:
            r = bench(path, args.work, args.past, args.prompt, args.rounds, args.reuse, choice, args.any_length,
                      CLOCKS[args.clock], args.before)
            name = f"{path.stem} [{choice}]" if quantized else path.stem
            size = (args.work / f"{path.stem}_{choice}_decode.ncnn.bin").stat().st_size / 1e6

            def pair(k):
                return f"{r[k + '_min']:5.1f}/{r[k]:5.1f}" if k in r else ""

            def ratio(a, b):
                return f"{r[a + '_min'] / r[b + '_min']:4.2f}/{r[a] / r[b]:4.2f}" if a in r else ""
            for label in r["rows"]:
                dec, pre = f"{label}:decode", f"{label}:prompt"
                tail = (f"{r[label + ':dev']:10.1e} {'same' if r[label + ':same_token'] else 'diff':>5}"
                        if label + ":dev" in r else f"{'':16}")
                if not label:
                    tail += f" {size:7.0f} {r['peak_mb'] / r['weights_mb']:11.2f}"
                print(f"{label and '  ' + label or name:34} {pair('ort_decode'):>11} {pair(dec):>11} "
                      f"{ratio(dec, 'ort_decode'):>9} {pair('ort_prompt'):>11} {pair(pre):>11} "
                      f"{ratio(pre, 'ort_prompt'):>9} {tail}", flush=True)

if __name__ == "__main__":
    main()
