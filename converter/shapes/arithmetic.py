"""Shape arithmetic with unknown extents (None)."""
from __future__ import annotations

from converter.ir import Dim, Shape


def broadcast_dim(a: Dim, b: Dim) -> Dim:
    if a == 1:
        return b
    if b == 1 or a == b:
        return a
    if a is None or b is None:
        return a if b is None else b     # the known one, if the broadcast is valid at all
    raise ValueError(f"extents {a} and {b} do not broadcast")


def broadcast_shapes(*shapes: Shape) -> Shape:
    """numpy's rule: align trailing axes; None stays None unless the other side fixes it."""
    rank = max(len(s) for s in shapes)
    out: list[Dim] = [1] * rank
    for s in shapes:
        padded = (1,) * (rank - len(s)) + tuple(s)
        out = [broadcast_dim(x, y) for x, y in zip(out, padded)]
    return tuple(out)


def numel(shape: Shape) -> int | None:
    n = 1
    for d in shape:
        if d is None:
            return None
        n *= d
    return n
