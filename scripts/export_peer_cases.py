"""Export the reference converter's own ncnn test cases (pnnx's tools/pnnx/tests/ncnn/test_*.py in
Tencent/ncnn) to ONNX, with the input shapes their tests use.

    /work/zoo-venv/bin/python scripts/export_peer_cases.py NCNN_GIT_DIR [--out DIR] [--publish DIR] [NAME ...]
    # the committed set: ... NCNN_GIT_DIR --out models/peer_cases --max-bytes 1000000

NCNN_GIT_DIR is a git directory of Tencent/ncnn (bare is fine); the test files are read from its
HEAD at run time and never copied into this project. Each file's source is executed with torch
available; its test functions run until they call torch.jit.trace, which is intercepted: the traced
module and its example inputs are the case (a file with a second test function, e.g. a batch
variant, gives a second case). Each case is exported with torch.onnx.export(dynamo=False, opset 17)
to <out>/<name>.onnx (where that exporter fails, with dynamo=True, opset 18; --dynamo-first tries
dynamo first), checked against torch in onnxruntime, and described in <out>/manifest.json
(inputs: shape, dtype, the range the test drew from). Cases whose export fails are listed, not fatal.
Needs torch (a tools venv, not a project dependency); scripts/peer_cases_status.py judges the files.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import types
import warnings
from pathlib import Path

import numpy as np
import onnxruntime as ort
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from scripts.export_zoo import strip_debug_info  # noqa: E402

TESTS = "tools/pnnx/tests/ncnn"
DEFAULT_OUT = Path(os.environ.get("ONNX2NCNN_PEER_CASES", Path.home() / ".cache" / "onnx2ncnn" / "peer_cases"))


class Traced(Exception):
    """Raised by the stand-in torch.jit.trace: the test has handed over its module and inputs."""

    def __init__(self, module, inputs):
        super().__init__("traced")
        self.module, self.inputs = module, inputs


def capture_trace(module, example_inputs, *args, **kwargs):
    inputs = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    raise Traced(module, inputs)


def test_sources(git_dir: Path) -> dict[str, str]:
    listing = subprocess.run(["git", "--git-dir", str(git_dir), "ls-tree", "--name-only", f"HEAD:{TESTS}"],
                             check=True, capture_output=True, text=True).stdout.split()
    names = sorted(n for n in listing if n.startswith("test_") and n.endswith(".py"))
    return {n[len("test_"):-len(".py")]: subprocess.run(
        ["git", "--git-dir", str(git_dir), "show", f"HEAD:{TESTS}/{n}"], check=True, capture_output=True,
        text=True).stdout for n in names}


def cases_of(name: str, source: str) -> dict[str, tuple]:
    """{case name: (module, inputs)} from running the file's test functions up to their trace."""
    namespace = types.ModuleType(f"peer_{name}")
    exec(compile(source, f"{TESTS}/test_{name}.py", "exec"), namespace.__dict__)
    cases = {}
    for fn_name in [k for k in vars(namespace) if k == "test" or k.startswith("test_")]:
        torch.manual_seed(0)
        try:
            getattr(namespace, fn_name)()
        except Traced as traced:
            suffix = "" if fn_name == "test" else fn_name[len("test"):]
            cases[name + suffix] = (traced.module, traced.inputs)
    return cases


def describe(tensor: torch.Tensor) -> dict:
    values = tensor.detach().numpy()
    spec = {"shape": list(values.shape), "dtype": str(values.dtype)}
    if values.size:
        spec.update(low=round(float(values.min()), 4), high=round(float(values.max()), 4))
    return spec


def export_case(module, inputs, path: Path, dynamo: bool = False, opset: int | None = None) -> dict:
    if not all(isinstance(t, torch.Tensor) for t in inputs):
        raise TypeError("a traced input is not a tensor")
    names = [f"in{k}" for k in range(len(inputs))]
    with torch.no_grad():
        want = module(*inputs)
    want = want if isinstance(want, (tuple, list)) else (want,)
    outputs = [f"out{k}" for k in range(len(want))]
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        stdout, sys.stdout = sys.stdout, io.StringIO()
        try:
            torch.onnx.export(module, tuple(inputs), str(path), input_names=names, output_names=outputs,
                              opset_version=opset or (18 if dynamo else 17), dynamo=dynamo,
                              **({"external_data": False} if dynamo else {}))
        finally:
            sys.stdout = stdout
    if dynamo:
        strip_debug_info(path)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feeds = {i.name: inputs[names.index(i.name)].numpy() for i in session.get_inputs()}
    got = session.run(None, feeds)
    agrees = len(got) == len(want) and all(
        g.shape == tuple(w.shape) and np.allclose(g, w.numpy(), rtol=1e-3, atol=1e-3) for g, w in zip(got, want))
    return {"exporter": "dynamo" if dynamo else "ts",
            "inputs": {n: describe(t) for n, t in zip(names, inputs) if n in feeds},
            "outputs": outputs, "onnxruntime_matches_torch": bool(agrees)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("git_dir", type=Path)
    parser.add_argument("names", nargs="*", help="test file names without test_ and .py (default all)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--publish", type=Path, help="also copy the files to this folder")
    parser.add_argument("--dynamo-first", action="store_true", help="export with dynamo=True (opset 18) "
                        "first and fall back to the torchscript exporter (the default is the other way round)")
    parser.add_argument("--dynamo-opset", type=int, help="the opset for the dynamo exporter (default 18; "
                        "torch 2.14's own default is 20)")
    parser.add_argument("--max-bytes", type=int, help="drop cases whose file is larger (the committed "
                        "models/peer_cases holds the cases under 1000000 bytes)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    manifest_path = args.out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() and args.names else {}
    failures_path = args.out / "export_failures.txt"
    failures = {}
    if args.names and failures_path.exists():       # a partial run keeps the other files' entries
        failures = dict(line.split(": ", 1) for line in failures_path.read_text().splitlines() if ": " in line)
        failures = {k: v for k, v in failures.items() if not any(k == n or k.startswith(n + "_") for n in args.names)}
    torch.jit.trace = capture_trace
    os.system = lambda command: 0          # the tests call pnnx after tracing; never reached, but never run
    sources = test_sources(args.git_dir)
    for name, source in sources.items():
        if args.names and name not in args.names:
            continue
        try:
            cases = cases_of(name, source)
        except Exception as exc:
            failures[name] = f"test file: {type(exc).__name__}: {str(exc).strip().splitlines()[0][:120] if str(exc).strip() else ''}"
            continue
        if not cases:
            failures[name] = "no traced module (the test skips on this torch)"
        for case, (module, inputs) in cases.items():
            path = args.out / f"{case}.onnx"
            order = (True, False) if args.dynamo_first else (False, True)
            for dynamo in order:    # the second exporter only where the first one fails
                try:
                    manifest[case] = export_case(module, inputs, path, dynamo, args.dynamo_opset if dynamo else None)
                    if args.max_bytes is not None and path.stat().st_size > args.max_bytes:
                        raise ValueError(f"{path.stat().st_size} bytes, over --max-bytes")
                    break
                except Exception as exc:
                    path.unlink(missing_ok=True)
                    manifest.pop(case, None)
                    text = str(exc).strip().replace(str(path), path.name)
                    text = text.splitlines()[0][:120] if text else ""
                    label = "dynamo" if dynamo else "torchscript"
                    failures[case] = (f"{failures[case]}; {label}: {type(exc).__name__}: {text}"
                                      if dynamo != order[0] else f"export: {type(exc).__name__}: {text}")
            else:
                continue
            if dynamo != order[0]:
                failures[case] += f" (exported with dynamo={dynamo} instead)"
        print(f"{name}: {', '.join(cases) or '-'}", flush=True)
    manifest_path.write_text(json.dumps(dict(sorted(manifest.items())), indent=1) + "\n")
    failures_path.write_text("".join(f"{k}: {v}\n" for k, v in sorted(failures.items())))
    if args.publish:
        args.publish.mkdir(parents=True, exist_ok=True)
        for f in [*args.out.glob("*.onnx"), manifest_path, failures_path]:
            shutil.copy(f, args.publish / f.name)
    total = sum(p.stat().st_size for p in args.out.glob("*.onnx"))
    mismatched = [k for k, v in manifest.items() if not v["onnxruntime_matches_torch"]]
    lost = sorted(k for k in failures if k not in manifest)
    print(f"{len(manifest)} cases exported ({total / 2**20:.2f} MiB) to {args.out}; {len(lost)} not exported; "
          f"onnxruntime differs from torch on {len(mismatched)}: {' '.join(mismatched)}")
    for k, v in sorted(failures.items()):
        print(f"  {k}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
