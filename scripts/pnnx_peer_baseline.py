"""How many of its own ncnn test cases pnnx passes here: the baseline for scripts/peer_cases_status.py.

    /work/zoo-venv/bin/python scripts/pnnx_peer_baseline.py NCNN_GIT_DIR PNNX_BINARY [--status FILE] [NAME ...]

Each test file (tools/pnnx/tests/ncnn/test_*.py, read from the git dir at run time, never kept)
runs as its authors run it: in a scratch folder, in a forked child (pnnx or ncnn may crash), with
its call of the pnnx build it expects pointed at PNNX_BINARY; the file's own test() traces the
module, converts with pnnx, runs the ncnn files (the `ncnn` module) and compares with torch.
Needs torch and ncnn in the running Python (a tools venv, not a project dependency)."""
from __future__ import annotations

import argparse
import collections
import multiprocessing
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from scripts.export_peer_cases import test_sources  # noqa: E402

def run_in_child(name: str, pnnx: str) -> None:
    """In a forked child, inside the scratch folder: the test file's test(), pnnx pointed at `pnnx`."""
    import importlib
    run = os.system
    os.system = lambda command: run(command.replace("../../src/pnnx", pnnx) + " > pnnx.log 2>&1")
    sys.path.insert(0, ".")
    sys.exit(0 if importlib.import_module(f"test_{name}").test() else 1)


def run_case(name: str, source: str, pnnx: Path, timeout: float) -> tuple[str, str]:
    """Forked from a parent that has torch and ncnn imported already (one import, not one per case)."""
    with tempfile.TemporaryDirectory() as scratch:
        (Path(scratch) / f"test_{name}.py").write_text(source)
        here = os.getcwd()
        os.chdir(scratch)
        try:
            child = multiprocessing.get_context("fork").Process(target=run_in_child, args=(name, str(pnnx)))
            child.start()
            child.join(timeout)
        finally:
            os.chdir(here)
        if child.is_alive():
            child.kill()
            child.join()
            return "timeout", ""
    code = child.exitcode
    return {0: ("pass", ""), 1: ("wrong", "test() returned False")}.get(
        code, ("crash" if code < 0 else "error", f"exit code {code}"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("git_dir", type=Path)
    parser.add_argument("pnnx", type=Path)
    parser.add_argument("names", nargs="*")
    parser.add_argument("--status", type=Path)
    parser.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args(argv)
    import ncnn  # noqa: F401  (imported once here, inherited by every forked case)
    import torch
    torch.set_num_threads(1)
    results = {}
    for name, source in test_sources(args.git_dir).items():
        if args.names and name not in args.names:
            continue
        results[name] = run_case(name, source, args.pnnx.resolve(), args.timeout)
        print(f"{name:40s} {results[name][0]:8s} {results[name][1]}", flush=True)
        if args.status:           # rewritten after every case: a long run can be read while it goes
            write_status(args.status, results)
    print(summary_of(results))
    return 0


def summary_of(results: dict) -> str:
    counts = collections.Counter(status for status, _ in results.values())
    return f"pnnx on its own {len(results)} ncnn test files: " + ", ".join(f"{n} {s}" for s, n in counts.most_common())


def write_status(path: Path, results: dict) -> None:
    path.write_text(summary_of(results) + "\n\n" + "".join(f"{k}\t{s}\t{d}\n" for k, (s, d) in sorted(results.items())))


if __name__ == "__main__":
    sys.exit(main())
