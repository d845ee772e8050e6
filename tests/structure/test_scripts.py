"""Every script in scripts/ starts as its docstring says (`python scripts/X.py --help` from the
checkout): a rename in the library once left the pnnx benchmark dead for a session, unnoticed.
Scripts that need torch (the exporters, a tools venv) are only compiled here."""
from __future__ import annotations

import py_compile
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p for p in (ROOT / "scripts").glob("*.py") if p.name != "__init__.py")
NEEDS_TORCH = {"export_zoo.py", "export_decoders.py", "export_encdec.py", "export_peer_cases.py", "export_unrolled_cells.py",
               "pnnx_peer_baseline.py", "zoo_cnn.py", "zoo_detectors.py", "zoo_dynhw.py", "zoo_hf.py", "zoo_tv.py", "zoo_hf3.py",
               "zoo_timm3.py", "zoo_tv3.py", "zoo_specs.py"}
LIBRARY = {"onnx_judge.py", "broadcast_chain.py", "layer_profile.py"}     # imported by other scripts and tests, no command line


def test_scripts_are_listed():
    assert len(SCRIPTS) >= 15, [p.name for p in SCRIPTS]


@pytest.mark.parametrize("script", [p for p in SCRIPTS if p.name not in NEEDS_TORCH | LIBRARY], ids=lambda p: p.name)
def test_script_help_runs(script):
    result = subprocess.run([sys.executable, str(script), "--help"], cwd=ROOT, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "usage" in result.stdout.lower(), result.stdout[-2000:]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_script_compiles(script, tmp_path):
    py_compile.compile(str(script), cfile=str(tmp_path / "x.pyc"), doraise=True)
