"""The pip ncnn releases the release tests run files in, each in its own virtual environment,
built on first use under a cache folder and reused (ONNX2NCNN_RUNTIME_CACHE, default
~/.cache/onnx2ncnn/ncnn-runtimes). A lock lets parallel test workers share one build."""
from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

from converter.ncnn_side.releases import TESTED


def cache_dir() -> Path:
    return Path(os.environ.get("ONNX2NCNN_RUNTIME_CACHE", Path.home() / ".cache" / "onnx2ncnn" / "ncnn-runtimes"))


def python_of(release: int) -> Path:
    """The Python of a venv holding ncnn==1.0.<release> and numpy; built once, then reused."""
    folder = cache_dir() / f"ncnn-1.0.{release}"
    python = folder / "bin" / "python"
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".ncnn-1.0.{release}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / "ready").is_file():
            partial = folder.with_name(folder.name + ".partial")
            shutil.rmtree(partial, ignore_errors=True)
            subprocess.run([sys.executable, "-m", "venv", str(partial)], check=True, capture_output=True)
            done = subprocess.run([str(partial / "bin" / "python"), "-m", "pip", "install", "-q",
                                   f"ncnn==1.0.{release}", "numpy"], capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(f"pip install ncnn==1.0.{release} failed: {done.stderr.strip()[-500:]}")
            shutil.rmtree(folder, ignore_errors=True)
            partial.rename(folder)          # a venv's scripts name their folder: fix the python path below
            (folder / "ready").write_text(f"ncnn==1.0.{release}\n")
    return python


def all_releases() -> dict[int, Path]:
    return {release: python_of(release) for release in TESTED}
