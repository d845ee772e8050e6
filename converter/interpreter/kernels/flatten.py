"""ncnn Flatten: any blob to 1-D."""
from __future__ import annotations

from ..registry import kernel


@kernel("Flatten")
def flatten(p, weights, x):
    return x.reshape(-1)


