"""How many threads BLAS may use while the interpreter runs: one, unless ONNX2NCNN_BLAS_THREADS says.

Measured on a shared 2-core machine (load average 3-5): a BLAS call split over two threads
waits for its second thread a scheduler tick at a time, and YOLOv8n 320 took 1100 ms with two
threads against 190 ms with one; PP-OCRv4 det 4200 ms against 660 ms. One thread never waits.
On an idle many-core machine more threads can be faster: ONNX2NCNN_BLAS_THREADS=N allows N,
0 leaves BLAS as it is. Without threadpoolctl nothing is limited.
"""
from __future__ import annotations

import os
from contextlib import nullcontext
from functools import lru_cache

ENV = "ONNX2NCNN_BLAS_THREADS"


@lru_cache(maxsize=1)
def _controller():
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return None
    return ThreadpoolController()


def blas_threads():
    """A context limiting BLAS to the configured thread count (cheap: the controller is cached)."""
    try:
        limit = int(os.environ.get(ENV, "1"))
    except ValueError:
        limit = 1
    controller = _controller()
    if controller is None or limit <= 0:
        return nullcontext()
    return controller.limit(limits=limit, user_api="blas")
