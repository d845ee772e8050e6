"""Blob memory recycled within and across runs, like ncnn's pool allocator.

A fresh multi-megabyte numpy array costs a page fault per 4 KiB the first time
it is written (about 2 µs each on a VM): at 224x224 that was a quarter of a
run. A Plan owns a BufferPool. While it runs, kernels that ask `empty(shape)`
for 128 KiB or more get memory some earlier released blob left behind (the
smallest free buffer that holds it and is at most a third larger, ncnn's
rule), and the plan hands each released blob back with `recycle`.

Only memory nothing else can see is recycled: its owning array is float32,
writeable and contiguous; the released array is held by the caller's one
local variable and, if it is a view, its owner by that view alone. CPython's
reference counts tell (views, a second slot, a caller's reference all count);
the expected counts are measured at import on probes that take the same code
path. After a run the pool keeps only buffers that served `empty` during it,
so it never grows past one run's working set. A lock keeps the pool's lists
consistent when threads run the same plan at once.
"""
from __future__ import annotations

import bisect
import math
import sys
import threading

import numpy as np

F32 = np.float32
SIZE_SLACK = 4 / 3        # a free buffer serves requests down to 3/4 of its size
# Smaller arrays bypass the pool: malloc serves them from its heap without page faults
# (mmap starts at 128 KiB), and the pool's bookkeeping cost more than it saved on small models.
POOL_MIN_FLOATS = 1 << 15
_active = threading.local()


def _counts(array: np.ndarray) -> tuple[int, int]:
    base = array.base
    return sys.getrefcount(array), (0 if base is None else sys.getrefcount(base))


def _recycle_path(array: np.ndarray) -> tuple[int, int]:
    """`recycle`'s frame shape (one parameter, then `_counts`), for calibration."""
    return _counts(array)


def _calibrate() -> tuple[int, tuple[int, int]]:
    owner = np.empty(2, dtype=F32)
    lone = _recycle_path(owner)[0]
    view = np.empty(2, dtype=F32)[:1]
    return lone, _recycle_path(view)


LONE_OWNER, LONE_VIEW = _calibrate()


class BufferPool:
    def __init__(self):
        self._sizes: list[int] = []              # sorted sizes of the free buffers
        self._free: list[np.ndarray] = []        # the free owning arrays, in the same order
        self._served: set[int] = set()           # ids of buffers `take` handed out this run
        self._lock = threading.Lock()

    def take(self, shape: tuple) -> np.ndarray:
        n = math.prod(shape)
        with self._lock:
            i = bisect.bisect_left(self._sizes, n)
            if i < len(self._sizes) and self._sizes[i] <= n * SIZE_SLACK:
                del self._sizes[i]
                owner = self._free.pop(i)
            else:
                owner = None
        if owner is None:
            owner = np.empty(n, dtype=F32)
        self._served.add(id(owner))
        return owner.reshape(-1)[:n].reshape(shape)

    def give(self, owner: np.ndarray) -> None:
        with self._lock:
            i = bisect.bisect_left(self._sizes, owner.size)
            self._sizes.insert(i, owner.size)
            self._free.insert(i, owner)

    def end_run(self) -> None:
        """Keep only the buffers that served requests this run: the next run needs no more."""
        with self._lock:
            kept = [(s, o) for s, o in zip(self._sizes, self._free) if id(o) in self._served]
            self._sizes, self._free = [s for s, _ in kept], [o for _, o in kept]
            self._served.clear()

    def __enter__(self) -> BufferPool:
        _active.pool = self
        return self

    def __exit__(self, *exc) -> None:
        _active.pool = None
        self.end_run()


def empty(shape: tuple) -> np.ndarray:
    """An uninitialized float32 array, from the running plan's pool when one is active."""
    pool = getattr(_active, "pool", None)
    if pool is None or math.prod(shape) < POOL_MIN_FLOATS:
        return np.empty(shape, dtype=F32)
    return pool.take(tuple(shape))


def _owner_fits(owner) -> bool:
    return (type(owner) is np.ndarray and owner.base is None and owner.dtype == F32
            and owner.flags.writeable and owner.flags.c_contiguous)


def exclusive(array) -> bool:
    """True when nothing but the caller's one local variable can see `array`'s memory,
    so a kernel may write its result over it."""
    if type(array) is not np.ndarray:
        return False
    if array.base is None:
        return _owner_fits(array) and _counts(array)[0] == LONE_OWNER
    return _owner_fits(array.base) and _counts(array) == LONE_VIEW


def recycle(array) -> None:
    """Hand an array's memory back to the running plan's pool if nothing else can see it.
    Call it with the array held in exactly one local variable of the caller.
    (It repeats `exclusive`'s test inline: calling `exclusive` would add a frame, and so a
    reference, to the counts that LONE_OWNER / LONE_VIEW were calibrated for.)"""
    pool = getattr(_active, "pool", None)
    if pool is None or type(array) is not np.ndarray:
        return
    if array.base is None:
        if array.size >= POOL_MIN_FLOATS and _owner_fits(array) and _counts(array)[0] == LONE_OWNER:
            pool.give(array)
    elif _owner_fits(array.base) and array.base.size >= POOL_MIN_FLOATS and _counts(array) == LONE_VIEW:
        pool.give(array.base)
