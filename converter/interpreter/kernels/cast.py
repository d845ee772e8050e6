"""Cast between ncnn element types (cast.cpp; types 0 auto, 1 float32, 2 float16, 3 int8, 4 bfloat16).

The interpreter holds every blob as float32, so a float16 or bfloat16 blob is held as the
float32 values it represents. What the pip runtime (1.0.20261020, x86) was measured to do:
- type_from == type_to: the blob passes through unchanged;
- 1 -> 2 converts four values at a time with F16C (round to nearest even, float16
  subnormals kept, overflow to inf) and the last size % 4 values of each chunk (the whole
  blob for 1-D/2-D, each channel for 3-D/4-D; none when packing makes the chunk a multiple
  of 4) one by one: ties away from zero and results below 2**-14 flushed to zero;
- 1 -> 4 rounds to bfloat16 by adding half an ulp and truncating (ties away from zero);
  on a CPU with AVX512-BF16 the runtime converts eight values at a time with the CPU's own
  instruction (ties to even) and the rest of each chunk one by one (ties away); the chunk is
  the packed blob (elempack 16/8/4 where the outer extent divides by it), so which values tie
  to even depends on the shape. The interpreter follows the CPU it runs on;
- 2 -> 1 and 4 -> 1 after such a cast give those values back;
- anything with type 0 (auto) or 3 (int8), and 2 <-> 4, computes garbage.
ncnn reads a 2 -> 1 / 4 -> 1 input's memory as halves whatever it holds, and layers other
than Cast fed a float16 blob mostly compute garbage too (measured: BinaryOp, Sigmoid); the
kernel cannot see its neighbours, but refuses inputs that cannot be float16 / bfloat16.
"""
from __future__ import annotations

import functools

import numpy as np

from ..registry import fail, kernel

FLOAT32, FLOAT16, BFLOAT16 = 1, 2, 4
_NAMES = {0: "auto", 1: "float32", 2: "float16", 3: "int8", 4: "bfloat16"}


def to_float16(x: np.ndarray) -> np.ndarray:
    """What ncnn's x86 Cast 1 -> 2 stores, as float32 values."""
    out = x.astype(np.float16).astype(np.float32)
    one_by_one = ~_simd_converted(x.shape, 4)
    out[one_by_one] = _float16_one_by_one(x[one_by_one])
    return out


def _simd_converted(shape: tuple[int, ...], lanes: int) -> np.ndarray:
    """Which values of a blob of this (numpy-order) shape ncnn's x86 Cast converts `lanes` at a
    time: the runtime packs the outer extent by 16, 8 or 4 where it divides (AVX-512), walks each
    chunk (the whole blob for 1-D/2-D, a channel group for 3-D/4-D) in packed order, and converts
    the last size % lanes values of a chunk one by one."""
    outer = shape[0]
    pack = next((p for p in (16, 8, 4) if outer % p == 0), 1)
    inner = int(np.prod(shape[1:], dtype=np.int64))
    lane = np.arange(outer) % pack                     # position inside a pack of outer indices
    group = np.arange(outer) // pack
    # packed memory: [group][inner position][lane]; 1-D/2-D blobs are one chunk, else one per group
    packed = (np.arange(inner)[None, :] * pack + lane[:, None])
    if len(shape) <= 2:
        packed = packed + (group * inner * pack)[:, None]
        chunk_size = outer * inner
    else:
        chunk_size = inner * pack
    return (packed < chunk_size - chunk_size % lanes).reshape(shape)


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
    """What ncnn's x86 Cast 1 -> 4 stores, as float32 values, on the CPU running this code."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    away = (bits + np.uint32(0x8000)) & np.uint32(0xFFFF0000)
    if not host_has_avx512_bf16():
        return away.view(np.float32)
    even = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) & np.uint32(0xFFFF0000)
    return np.where(_simd_converted(x.shape, 8), even, away).view(np.float32)


@functools.cache
def host_has_avx512_bf16() -> bool:
    """Whether the runtime's AVX512-BF16 kernels run here (Linux reports the CPU's flags)."""
    try:
        with open("/proc/cpuinfo") as info:
            return any(line.startswith("flags") and " avx512_bf16" in line for line in info)
    except OSError:
        return False


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
