"""ncnn's Mat axes and the one builder of Reshape / MemoryData shape params.

An ncnn Mat has 1..4 axes, named innermost first: w, h, d, c. Shapes here are in
numpy order (c, d, h, w), as the interpreter stores them. Reshape and MemoryData
write an extent per axis name (w=0, h=1, d=11, c=2); Reshape also takes 0 (copy
the input's extent of the same name) and -1 (infer from the element count).
"""
from __future__ import annotations

from typing import Iterable, Optional, Sequence

MAX_NCNN_RANK = 4
AXIS_NAMES = {1: "w", 2: "wh", 3: "whc", 4: "whdc"}
SHAPE_PARAM_ID = {"w": 0, "h": 1, "d": 11, "c": 2}
COPY, INFER = 0, -1


def axis_name(rank: int, axis: int) -> str:
    """ncnn's name (w/h/d/c) of numpy-order axis `axis` of a rank-`rank` Mat."""
    return AXIS_NAMES[rank][rank - 1 - axis]


def reshape_params(target: Sequence[Optional[int]], copied: Iterable[int] = ()) -> dict[int, int]:
    """{param id: extent} giving the numpy-order shape `target` (() is [1]).

    Known extents are written as they are. An unknown extent at an index in
    `copied` is copied from the input (the caller knows the input's axis of the
    same name has it); one other unknown extent is inferred. ValueError when a
    second one would need inferring.
    """
    target = tuple(target) or (1,)
    copied = set(copied)
    params, inferred = {}, False
    for i, extent in enumerate(target):
        pid = SHAPE_PARAM_ID[axis_name(len(target), i)]
        if extent is not None:
            params[pid] = int(extent)
        elif i in copied:
            params[pid] = COPY
        elif not inferred:
            params[pid], inferred = INFER, True
        else:
            raise ValueError(f"ncnn Reshape cannot express the shape {list(target)}: more than one unknown "
                             "extent that is not copied in place")
    return params


def same_named(source_rank: int, target_rank: int, pairs: dict[int, int]) -> set[int]:
    """Target axes whose paired source axis (pairs: target -> source) has the same ncnn name,
    i.e. the ones Reshape can copy."""
    return {i for i, j in pairs.items() if axis_name(source_rank, j) == axis_name(target_rank, i)}
