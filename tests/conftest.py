import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import os  # noqa: E402

# Plans pick their BLAS thread count from the cores free when they are built, and OpenBLAS rounds
# differently per count (ulps): tests that compare two plans bit for bit need one fixed count.
os.environ.setdefault("ONNX2NCNN_BLAS_THREADS", "1")
