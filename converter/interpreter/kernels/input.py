"""ncnn Input: a placeholder; the plan feeds the blob."""
from __future__ import annotations

from ..registry import fail, kernel


@kernel("Input")
def input_(p, weights):
    fail("Input layers take their blob from the feeds")


