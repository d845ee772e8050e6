"""ncnn ShuffleChannel: channel groups transposed (reverse=1 undoes it)."""
from __future__ import annotations

from ..registry import fail, kernel, shape_str
from .scale import by_channel


@kernel("ShuffleChannel")
def shuffle_channel(p, weights, x):
    if x.ndim < 3 and (p.group != 1 or p.reverse):
        # ncnn's x86 ShuffleChannel shuffles a 2-D blob's packed rows, and crashes reversing one
        fail(f"ShuffleChannel on input {shape_str(x)}: ncnn shuffles only the c axis of a 3-D or 4-D blob")
    rows = by_channel(x)
    channels = rows.shape[0]
    if p.group < 1 or channels % p.group:
        fail(f"ShuffleChannel group {p.group} does not divide the {channels} channels of input {shape_str(x)}")
    groups = channels // p.group if p.reverse else p.group
    return rows.reshape(groups, channels // groups, -1).transpose(1, 0, 2).reshape(x.shape)


