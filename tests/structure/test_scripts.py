"""Every script in scripts/ starts as its docstring says (`python scripts/X.py --help` from the
checkout): a rename in the library once left the pnnx benchmark dead for a session, unnoticed.
Scripts that need torch (the exporters, a tools venv) are only compiled here."""
from __future__ import annotations

import json
import py_compile
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p for p in (ROOT / "scripts").glob("*.py") if p.name != "__init__.py")
NEEDS_TORCH = {"export_zoo.py", "export_decoders.py", "export_merged.py", "export_encdec.py", "export_peer_cases.py",
               "export_unrolled_cells.py", "export_nhwc.py", "export_optimum_decoders.py", "export_big_decoders.py",
               "pnnx_peer_baseline.py", "zoo_cnn.py", "zoo_detectors.py", "zoo_dynhw.py", "zoo_hf.py", "zoo_tv.py", "zoo_hf3.py",
               "zoo_timm3.py", "zoo_tv3.py", "zoo_specs.py"}
LIBRARY = {"onnx_judge.py", "broadcast_chain.py", "layer_profile.py"}     # imported by other scripts and tests, no command line


def test_scripts_are_listed():
    assert len(SCRIPTS) >= 15, [p.name for p in SCRIPTS]


RUNS_HELP = [p for p in SCRIPTS if p.name not in NEEDS_TORCH | LIBRARY]

# One child runs every script's --help in turn as `python scripts/X.py --help` would (the script as
# __main__, scripts/ first on sys.path), so the library and onnxruntime are imported once, not 20 times
HELP_DRIVER = """
import contextlib, io, json, runpy, sys
results = {}
for path in sys.argv[1:]:
    out, err, code = io.StringIO(), io.StringIO(), 0
    sys.argv = [path, "--help"]
    sys.path[0] = path.rsplit("/", 1)[0]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            runpy.run_path(path, run_name="__main__")
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException as exc:
            code, _ = 1, err.write(f"{type(exc).__name__}: {exc}")
    results[path] = [code, out.getvalue(), err.getvalue()]
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def help_runs():
    result = subprocess.run([sys.executable, "-c", HELP_DRIVER, *map(str, RUNS_HELP)], cwd=ROOT,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("script", RUNS_HELP, ids=lambda p: p.name)
def test_script_help_runs(script, help_runs):
    code, stdout, stderr = help_runs[str(script)]
    assert code == 0, stderr[-2000:]
    assert "usage" in stdout.lower(), stdout[-2000:]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_script_compiles(script, tmp_path):
    py_compile.compile(str(script), cfile=str(tmp_path / "x.pyc"), doraise=True)
