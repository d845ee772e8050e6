"""Seeded mutation fuzz of the command line: no input may ever get a traceback.

    python scripts/fuzz.py [--seed N] [--count N] [--time-limit S] [--workers N]

Mutates the bundled models (flipped, inserted and deleted bytes; edits to attributes,
input shapes, op types and node inputs) and their converted .param/.bin files (edited
tokens, dropped lines, truncated weights), runs `convert`, `verify` or `run` on each,
and prints how each case ended: exit 0 / 1, a clean exit 2 (one line on stderr), a
traceback, a multi-line error, the last-guard "internal error", a signal, a timeout,
files left in the output folder after a failure, files written outside it.

Each case runs `converter.cli.main` in a forked child (the modules are imported once),
in its own empty working folder, with its own output folder and a time limit.
"""
from __future__ import annotations

import argparse
import collections
import os
import random
import signal
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from converter.cli import main as cli_main  # noqa: E402

MODELS = ["bcast_demo", "cnn_dynamic", "cnn_small", "transformer_small"]
OPS = ["Conv", "Relu", "Add", "MatMul", "Reshape", "Transpose", "MaxPool", "Concat", "Softmax", "Gemm", "Resize",
       "Gather", "Slice", "Pad", "BatchNormalization", "ConvTranspose", "Split", "Squeeze", "Where", "Loop"]
ODD_INTS = [0, -1, 1, 2, 3, 7, 10**12, -10**12, 2**31, -(2**31)]
OUTCOMES = ["exit 0", "exit 1", "clean exit 2", "traceback", "multi-line error", "internal error",
            "signal", "timeout", "files left in -o", "files outside -o"]


@dataclass
class Case:
    kind: str                    # "model" or "param"
    command: str                 # convert / verify / run
    data: bytes
    extra: bytes = b""           # the .bin of a "param" case


# ---- mutations -------------------------------------------------------------------

def mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        if not b:
            break
        i = rng.randrange(len(b))
        choice = rng.random()
        if choice < 0.5:
            b[i] = rng.randrange(256)
        elif choice < 0.75:
            b.insert(i, rng.randrange(256))
        else:
            del b[i:i + rng.randint(1, 16)]
    return bytes(b)


def mutate_model(rng: random.Random, model: onnx.ModelProto) -> onnx.ModelProto:
    m = onnx.ModelProto.FromString(model.SerializeToString())
    g = m.graph
    what = rng.choice(["attribute", "shape", "op", "input", "initializer"])
    if what == "attribute" and g.node:
        node = rng.choice(g.node)
        ints = [a for a in node.attribute if a.type in (onnx.AttributeProto.INT, onnx.AttributeProto.INTS)]
        if ints:
            a = rng.choice(ints)
            if a.type == onnx.AttributeProto.INT:
                a.i = rng.choice(ODD_INTS)
            elif a.ints:
                k = rng.randrange(len(a.ints))
                a.ints[k] = rng.choice(ODD_INTS)
                if rng.random() < 0.3:
                    a.ints.append(rng.choice(ODD_INTS))
        elif node.attribute:
            node.attribute.remove(rng.choice(node.attribute))
    elif what == "shape" and g.input:
        dims = rng.choice(g.input).type.tensor_type.shape.dim
        if dims:
            d = rng.choice(dims)
            if rng.random() < 0.2:
                dims.remove(d)
            else:
                d.dim_value = rng.choice([0, 1, 2, 5, 10**12])
    elif what == "op" and g.node:
        rng.choice(g.node).op_type = rng.choice(OPS)
    elif what == "input" and g.node:
        node = rng.choice(g.node)
        names = [t for n in g.node for t in n.output] + [i.name for i in g.initializer] + ["", "missing"]
        if node.input:
            node.input[rng.randrange(len(node.input))] = rng.choice(names)
    elif g.initializer:
        t = rng.choice(g.initializer)
        if t.dims:
            t.dims[rng.randrange(len(t.dims))] = rng.choice([0, 1, 3, 10**6])
    return m


def mutate_param(rng: random.Random, text: str) -> str:
    lines = text.splitlines()
    for _ in range(rng.randint(1, 3)):
        if len(lines) < 3:
            break
        i = rng.randrange(len(lines))
        tokens = lines[i].split()
        choice = rng.random()
        if choice < 0.15:
            del lines[i]
        elif tokens and choice < 0.7:
            k = rng.randrange(len(tokens))
            head = tokens[k].split("=")[0] + "=" if "=" in tokens[k] else ""
            tokens[k] = head + str(rng.choice(ODD_INTS + [-233, 4, 99]))
            lines[i] = " ".join(tokens)
        elif tokens:
            other = rng.choice(lines).split()
            if other:
                tokens[rng.randrange(len(tokens))] = rng.choice(other)
            lines[i] = " ".join(tokens)
    return "\n".join(lines) + "\n"


def corpus(seed: int, count: int, converted: dict) -> list[Case]:
    rng = random.Random(seed)
    models = {name: onnx.load(str(ROOT / "models" / f"{name}.onnx")) for name in MODELS}
    cases = []
    for _ in range(count):
        kind = rng.random()
        if kind < 0.25:
            name = rng.choice(MODELS)
            data = mutate_bytes(rng, models[name].SerializeToString())
            cases.append(Case("model", rng.choice(["convert", "convert", "verify"]), data))
        elif kind < 0.7:
            name = rng.choice(MODELS)
            m = models[name]
            for _ in range(rng.randint(1, 2)):
                m = mutate_model(rng, m)
            cases.append(Case("model", rng.choice(["convert", "convert", "verify"]), m.SerializeToString()))
        else:
            name = rng.choice(list(converted))
            param, bin_ = converted[name]
            if rng.random() < 0.8:
                param = mutate_param(rng, param.decode()).encode()
            else:
                bin_ = bin_[:rng.randrange(len(bin_) + 1)] if bin_ else bin_
            cases.append(Case("param", "run", param, bin_))
    return cases


def convert_bundled() -> dict:
    """Each bundled model's .param/.bin and a feed file, to mutate."""
    from converter import convert
    out = {}
    for name in MODELS:
        model = convert(ROOT / "models" / f"{name}.onnx")
        with tempfile.TemporaryDirectory() as folder:
            param, bin_ = Path(folder) / "m.param", Path(folder) / "m.bin"
            model.save(param, bin_)
            out[name] = (param.read_bytes(), bin_.read_bytes())
    return out


# ---- running a case ------------------------------------------------------------------

def _child(case: Case, work: Path, out_dir: Path) -> None:
    os.chdir(work)
    err = os.open(work / ".stderr", os.O_WRONLY | os.O_CREAT)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(err, 2)
    sys.stderr = os.fdopen(2, "w", buffering=1)
    try:
        if case.kind == "model":
            (work / "m.onnx").write_bytes(case.data)
            argv = [case.command, "m.onnx"] + (["-o", str(out_dir)] if case.command == "convert" else [])
        else:
            (work / "m.param").write_bytes(case.data)
            (work / "m.bin").write_bytes(case.extra)
            np.save(work / "x.npy", np.zeros((3, 8, 8), np.float32))
            argv = ["run", "m.param", "m.bin", "--input", "input=x.npy", "--input", "data=x.npy",
                    "-o", str(out_dir / "out.npz")]
        code = cli_main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 2
    except BaseException:
        traceback.print_exc()
        code = 1
    sys.stderr.flush()
    os._exit(code if isinstance(code, int) else 0)


def run_case(case: Case, time_limit: float, show: bool = False) -> list[str]:
    with tempfile.TemporaryDirectory() as folder:
        work, out_dir = Path(folder) / "work", Path(folder) / "out"
        work.mkdir()
        out_dir.mkdir()
        pid = os.fork()
        if pid == 0:
            _child(case, work, out_dir)
        deadline = time.monotonic() + time_limit
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return ["timeout"]
            time.sleep(0.01)
        stderr = (work / ".stderr").read_text(errors="replace") if (work / ".stderr").exists() else ""
        if show:
            print(f"{case.kind} {case.command}:\n{stderr}")
        outcomes = _classify(status, stderr)
        made = [p for p in out_dir.rglob("*")]
        if made and not outcomes[0].startswith("exit 0"):
            outcomes.append("files left in -o")
        inputs = {".stderr", "m.onnx", "m.param", "m.bin", "x.npy"}
        if [p for p in work.iterdir() if p.name not in inputs]:
            outcomes.append("files outside -o")
        return outcomes


def _classify(status: int, stderr: str) -> list[str]:
    if os.WIFSIGNALED(status):
        return ["signal"]
    code = os.WEXITSTATUS(status)
    lines = [line for line in stderr.splitlines() if line.strip() and not line.startswith("onnx2ncnn: warning:")]
    if "Traceback (most recent call last)" in stderr:
        return ["traceback"]
    if "internal error" in stderr:
        return ["internal error"]
    if code == 2:
        return ["clean exit 2" if len(lines) == 1 else "multi-line error"]
    if code in (0, 1):
        return [f"exit {code}"] if not lines or code == 1 else [f"exit {code}", "multi-line error"]
    return [f"exit {code}"]


def fuzz(seed: int, count: int, time_limit: float, workers: int, deadline: float | None = None,
         examples: dict | None = None) -> collections.Counter:
    cases = corpus(seed, count, convert_bundled())
    counts: collections.Counter = collections.Counter()
    running: dict[int, int] = {}
    import multiprocessing
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(workers) as pool:
        results = pool.imap(_run_indexed, [(i, c, time_limit) for i, c in enumerate(cases)])
        for i, outcomes in results:
            for o in outcomes:
                counts[o] += 1
                if examples is not None and o not in ("exit 0", "exit 1", "clean exit 2"):
                    examples.setdefault(o, []).append(i)
            if deadline is not None and time.monotonic() > deadline:
                pool.terminate()
                break
    del running
    return counts


def _run_indexed(item):
    i, case, time_limit = item
    return i, run_case(case, time_limit)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--count", type=int, default=500)
    parser.add_argument("--time-limit", type=float, default=60.0, help="per case, seconds")
    parser.add_argument("--total-time", type=float, default=None, help="stop after this many seconds")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--show", type=int, nargs="*", help="run these case numbers and print their stderr")
    args = parser.parse_args()
    if args.show:
        cases = corpus(args.seed, args.count, convert_bundled())
        for i in args.show:
            print(f"case {i}: {run_case(cases[i], args.time_limit, show=True)}")
        return
    start = time.monotonic()
    examples: dict = {}
    counts = fuzz(args.seed, args.count, args.time_limit, args.workers,
                  None if args.total_time is None else start + args.total_time, examples)
    print(f"{sum(counts[o] for o in OUTCOMES[:8])} cases, seed {args.seed}, {time.monotonic() - start:.0f} s")
    for outcome in OUTCOMES:
        print(f"  {outcome:<18} {counts[outcome]:>6}")
    for outcome, ids in examples.items():
        print(f"  {outcome}: cases {ids[:10]}")


if __name__ == "__main__":
    main()
