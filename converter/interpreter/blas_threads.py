"""How many threads BLAS may use while a plan runs: the cores nothing else is running on.

Measured on a 2-core machine (scripts/bench.py, YOLOv8n 320, interp/onnxruntime): idle, two BLAS
threads gave 2.6-2.9 and one thread 3.2-3.9; with one other busy process, two threads gave 4.3 and
one thread 1.9 (at load average 5: 9.5 against 1.9). A BLAS call split over two threads waits for
its second thread a scheduler tick at a time when another process holds that core. So when a plan
is built it counts the runnable tasks that are not its own (/proc/loadavg minus this process's
running threads) and lets BLAS use the cores left, at least one, for all its runs: OpenBLAS rounds
differently with another thread count (ulps), and one plan should give one answer.
ONNX2NCNN_BLAS_THREADS=N fixes N (0 leaves BLAS as it is). Without /proc, one thread.
"""
from __future__ import annotations

import os
from contextlib import nullcontext
from functools import lru_cache

from threadpoolctl import ThreadpoolController

ENV = "ONNX2NCNN_BLAS_THREADS"


@lru_cache(maxsize=1)
def _controller():
    return ThreadpoolController()


def _others_running() -> int | None:
    """Runnable tasks on the machine that are not threads of this process; None without /proc."""
    try:
        with open("/proc/loadavg") as f:
            running = int(f.read().split()[3].split("/")[0])
        own = 0
        for task in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{task}/stat") as f:
                    own += f.read().rsplit(")", 1)[1].split()[0] == "R"
            except OSError:
                continue
    except (OSError, ValueError, IndexError):
        return None
    return max(running - own, 0)


def choose_threads() -> int:
    """ONNX2NCNN_BLAS_THREADS if set (0: leave BLAS alone), else the cores free right now, at least 1."""
    try:
        return int(os.environ[ENV])
    except (KeyError, ValueError):
        others = _others_running()
        return 1 if others is None else max(1, (os.cpu_count() or 1) - others)


def blas_threads(threads: int):
    """A context limiting BLAS to `threads` for one run (cheap: the controller is cached)."""
    if threads <= 0:
        return nullcontext()
    return _controller().limit(limits=threads, user_api="blas")
