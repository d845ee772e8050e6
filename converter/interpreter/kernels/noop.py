"""ncnn Noop: passes its input through."""
from __future__ import annotations

from ..registry import kernel


@kernel("Noop")
def noop(p, weights, *xs):
    return xs


