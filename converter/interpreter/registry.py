"""The kernel table: one function per ncnn layer type, registered by type name.

A kernel is `fn(p, weights, *inputs) -> array | tuple[array, ...]` where `p`
is the layer's resolved Params (attribute access by param name, ncnn defaults
filled in), `weights` the layer's flat float32 buffers in .bin order, and the
inputs/outputs numpy float32 arrays in ncnn order (c, d, h, w). Kernels never
modify their inputs. A kernel registered with `outputs=True` also receives
`n_outputs`, the number of top blobs the layer has (ncnn's Split and Slice
read it from the layer line, not from the params).

A kernel registered with `prepare=True` is instead a factory
`fn(p, weights) -> step(*inputs)`, called once per execution plan: it does the
work that depends only on params and weights (reshaping weights, choosing a
code path) so that each run does only the arithmetic.

A kernel registered with `inplace=True` accepts `out=`: when its first input
dies at this layer and nothing else can see its memory, the plan passes that
array as `out`, and the kernel writes its result there if the shapes agree
(ncnn runs these layers in place too).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Callable

import numpy as np


F32 = np.float32
# ncnn's "not given / rest / keep" marker in Slice, Crop and Reshape params
AUTO = -233


class InterpreterError(Exception):
    """A graph the interpreter cannot run exactly as ncnn would; the message names the layer."""


@dataclass(frozen=True)
class Kernel:
    fn: Callable
    wants_outputs: bool = False
    prepare: bool = False
    inplace: bool = False

    def bind(self, p, weights: list[np.ndarray], n_outputs: int) -> Callable:
        """The layer's step: a callable taking only its input arrays."""
        extra = {"n_outputs": n_outputs} if self.wants_outputs else {}
        if self.prepare:
            return self.fn(p, weights, **extra)
        return partial(self.fn, p, weights, **extra)


KERNELS: dict[str, Kernel] = {}


def kernel(layer_type: str, outputs: bool = False, prepare: bool = False,
           inplace: bool = False) -> Callable[[Callable], Callable]:
    def register(fn: Callable) -> Callable:
        if layer_type in KERNELS:
            raise ValueError(f"two kernels for ncnn layer type {layer_type!r}")
        KERNELS[layer_type] = Kernel(fn, outputs, prepare, inplace)
        return fn
    return register


# ---- small helpers shared by kernels -----------------------------------------

def fail(message: str) -> None:
    """Raise the error a kernel reports for inputs ncnn would mis-compute or reject."""
    raise InterpreterError(message)


def shape_str(x: np.ndarray) -> str:
    return "(" + ",".join(str(d) for d in x.shape) + ")"


def extents(x: np.ndarray) -> dict[str, int]:
    """The Mat's w, h, d, c as ncnn sees them (absent axes are 1)."""
    if x.ndim == 3:          # a 3-D Mat is (c, h, w): no d
        c, d, h, w = x.shape[0], 1, x.shape[1], x.shape[2]
    else:
        c, d, h, w = (1,) * (4 - x.ndim) + tuple(x.shape)
    return {"w": w, "h": h, "d": d, "c": c}


def require_rank(x: np.ndarray, *ranks: int, what: str = "input") -> None:
    if x.ndim not in ranks:
        fail(f"{what} has shape {shape_str(x)}; ncnn handles only rank {' or '.join(map(str, ranks))} here")
