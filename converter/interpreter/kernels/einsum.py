"""Einsum (einsum.cpp): a sum of products over index letters, equation stored as char codes.

What the pip runtime (1.0.20261020) loads, measured:
- "ii" alone: the trace of a square matrix, as a [1] blob;
- "lhs,lhs->rhs" with input letters within i..x and rhs exactly "i", "ij", "ijk" or "ijkl"
  (the reference source reads any rhs as that prefix; the runtime refuses other spellings,
  and output letters that no input names); every letter not in rhs is summed.
Operands whose letter count or extents disagree make it read out of bounds (garbage or a
crash): refused here.
"""
from __future__ import annotations

import numpy as np

from ..registry import fail, kernel, shape_str

_OUT_LETTERS = "ijkl"


def _parse(codes) -> tuple[list[str], str]:
    text = "".join(chr(c) for c in codes)
    if text == "ii":
        return ["ii"], ""
    if "->" not in text:
        fail(f"Einsum equation {text!r} has no '->'; ncnn refuses to load it")
    lhs, rhs = text.split("->", 1)
    tokens = [t for t in lhs.split(",") if t]         # strtok skips empty tokens
    if any(not "i" <= ch <= "x" for t in tokens for ch in t) or rhs != _OUT_LETTERS[:len(rhs)] or not rhs:
        fail(f"Einsum equation {text!r}: ncnn loads only input letters i..x and an output spelled "
             f"i, ij, ijk or ijkl")
    if any(ch not in "".join(tokens) for ch in rhs):
        fail(f"Einsum equation {text!r}: ncnn refuses output letters that no input names")
    return tokens, rhs


def _letter_sizes(tokens: list[str], inputs) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for token, x in zip(tokens, inputs):
        if len(token) != x.ndim:
            fail(f"Einsum operand {token!r} names {len(token)} axes but the blob is {shape_str(x)}")
        for letter, n in zip(token, x.shape):
            if sizes.setdefault(letter, n) != n:
                fail(f"Einsum letter {letter!r} has extents {sizes[letter]} and {n}; ncnn would read out of bounds")
    return sizes


@kernel("Einsum")
def einsum(p, weights, *inputs):
    tokens, rhs = _parse(p.equation)
    if len(tokens) != len(inputs):
        fail(f"Einsum equation has {len(tokens)} operands but the layer has {len(inputs)} inputs")
    if not rhs:                                        # the trace
        x = inputs[0]
        if x.ndim != 2 or x.shape[0] != x.shape[1]:
            fail(f"Einsum 'ii' (trace) needs a square matrix, got {shape_str(x)}")
        return np.trace(x, dtype=np.float32).reshape(1)
    _letter_sizes(tokens, inputs)
    return np.einsum(",".join(tokens) + "->" + rhs, *inputs, dtype=np.float32)
