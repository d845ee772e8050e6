"""ncnn MemoryData: a constant blob from the .bin, shaped by w/h/d/c."""
from __future__ import annotations

import numpy as np

from ..registry import fail, kernel


@kernel("MemoryData", prepare=True)
def memorydata(p, weights):
    if p.d:
        shape = (p.c, p.d, p.h, p.w)
    elif p.c:
        shape = (p.c, p.h, p.w)
    elif p.h:
        shape = (p.h, p.w)
    elif p.w:
        shape = (p.w,)
    else:
        fail("MemoryData with w=h=d=c=0 holds one uninitialized value in ncnn")
    if weights[0].size != int(np.prod(shape)):
        fail(f"MemoryData data has {weights[0].size} values, shape {shape} needs {int(np.prod(shape))}")
    value = weights[0].reshape(shape)
    value.flags.writeable = False      # the layer's weights: no caller or kernel may change them
    return lambda: value


