"""Cast between ncnn element types (cast.cpp; types 0 auto, 1 float32, 2 float16, 3 int8, 4 bfloat16).

The interpreter holds every blob as float32, so a float16 or bfloat16 blob is held as the
float32 values it represents. What the pip runtime (1.0.20261020, x86) was measured to do:
- type_from == type_to: the blob passes through unchanged;
- 1 -> 2 converts four values at a time with F16C (round to nearest even, float16
  subnormals kept, overflow to inf) and the last size % 4 values of each chunk (the whole
  blob for 1-D/2-D, each channel for 3-D/4-D; none when packing makes the chunk a multiple
  of 4) one by one: ties away from zero and results below 2**-14 flushed to zero;
- 1 -> 4 rounds to bfloat16 by adding half an ulp and truncating (ties away from zero);
- 2 -> 1 and 4 -> 1 after such a cast give those values back;
- anything with type 0 (auto) or 3 (int8), and 2 <-> 4, computes garbage.
ncnn reads a 2 -> 1 / 4 -> 1 input's memory as halves whatever it holds, and layers other
than Cast fed a float16 blob mostly compute garbage too (measured: BinaryOp, Sigmoid); the
kernel cannot see its neighbours, but refuses inputs that cannot be float16 / bfloat16.
"""
from __future__ import annotations

import numpy as np

from ..registry import fail, kernel

FLOAT32, FLOAT16, BFLOAT16 = 1, 2, 4
_NAMES = {0: "auto", 1: "float32", 2: "float16", 3: "int8", 4: "bfloat16"}


def to_float16(x: np.ndarray) -> np.ndarray:
    """What ncnn's x86 Cast 1 -> 2 stores, as float32 values."""
    out = x.astype(np.float16).astype(np.float32)
    chunks, simd_out = _chunks(out), _chunks(x)
    tail = chunks.shape[1] % 4
    if tail and x.shape[0] % 4:          # a packed blob (outer extent divisible by 4) has no tail
        chunks[:, -tail:] = _float16_one_by_one(simd_out[:, -tail:])
    return out


def _chunks(x: np.ndarray) -> np.ndarray:
    """A view of x as (chunks, values per chunk): one chunk for 1-D/2-D, one per channel else."""
    return x.reshape(1, -1) if x.ndim <= 2 else x.reshape(x.shape[0], -1)


def _float16_one_by_one(x: np.ndarray) -> np.ndarray:
    """ncnn's scalar float32 -> float16: ties away from zero, |x| < 2**-14 becomes a signed zero."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    sign, magnitude = bits & np.uint32(0x80000000), bits & np.uint32(0x7FFFFFFF)
    rounded = (magnitude + np.uint32(0x1000)) & np.uint32(0xFFFFE000)
    rounded = np.where(rounded >= np.uint32(0x47800000), np.uint32(0x7F800000), rounded)   # >= 65536: inf
    rounded = np.where(magnitude < np.uint32(0x38800000), np.uint32(0), rounded)
    out = (sign | rounded).view(np.float32)
    return np.where(np.isnan(x), x, out)


def to_bfloat16(x: np.ndarray) -> np.ndarray:
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    return ((bits + np.uint32(0x8000)) & np.uint32(0xFFFF0000)).view(np.float32)


def _require_held(x: np.ndarray, rounded: np.ndarray, type_from: int) -> None:
    same = (rounded == x) | np.isnan(x)
    if not same.all():
        fail(f"Cast from {_NAMES[type_from]} on a blob holding float32 values: ncnn would read "
             f"their bits as {_NAMES[type_from]} (feed it from a Cast to {_NAMES[type_from]})")


@kernel("Cast")
def cast(p, weights, x):
    route = (p.type_from, p.type_to)
    if p.type_from == p.type_to:
        return x
    if route == (FLOAT32, FLOAT16):
        return to_float16(x)
    if route == (FLOAT32, BFLOAT16):
        return to_bfloat16(x)
    if route == (FLOAT16, FLOAT32):
        _require_held(x, x.astype(np.float16).astype(np.float32), FLOAT16)
        return x
    if route == (BFLOAT16, FLOAT32):
        _require_held(x, to_bfloat16(x), BFLOAT16)
        return x
    fail(f"Cast from {_NAMES.get(p.type_from, p.type_from)} to {_NAMES.get(p.type_to, p.type_to)}: "
         f"the ncnn runtime computes garbage for it")
