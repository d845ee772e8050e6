"""ncnn Split: the same blob to several consumers."""
from __future__ import annotations

from ..registry import kernel


@kernel("Split", outputs=True)
def split(p, weights, x, n_outputs):
    return (x,) * n_outputs


