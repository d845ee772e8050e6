"""ncnn Reshape: w/h/d/c extents with copy (0) / infer (-1) codes, 6= expressions, and pnnx's batch-axis form (12=/13=)."""
from __future__ import annotations

import numpy as np

from converter.ncnn_side.expression import ExpressionError, count_blobs, count_terms, evaluate

from ..registry import AUTO, extents, fail, kernel, shape_str

NO_BATCH_AXIS = 233   # Reshape 12=/13= default: the shape has no batch axis


def _batch_target(p, xs) -> tuple:
    """ncnn's batch-aware Reshape (params 12/13, as pnnx writes them) for blobs of batch 1.

    The shape is read outermost first with the batch axis in it: the input's logical shape
    has a 1 inserted at input_batch_axis, the expression (or w/h/d/c) lists the output's
    logical shape innermost first, `0` copies the input extent at the same outer position,
    `-1` is inferred, and the output_batch_axis entry becomes the Mat's batch count."""
    x = xs[0]
    logical = list(x.shape)
    in_axis = p.input_batch_axis
    if in_axis != NO_BATCH_AXIS:
        in_axis += x.ndim + 1 if in_axis < 0 else 0
        if not 0 <= in_axis <= x.ndim:
            fail(f"Reshape input_batch_axis {p.input_batch_axis} is out of range for {shape_str(x)}")
        logical.insert(in_axis, 1)
    if p.shape_expr:
        try:
            wanted = evaluate(p.shape_expr, [b.shape for b in xs])[::-1]
        except ExpressionError as exc:
            fail(f"Reshape shape_expr: {exc}")
    else:
        wanted = [v for v in (p.c, p.d, p.h, p.w) if v != AUTO]
    if not 0 < len(wanted) <= 5:
        fail(f"Reshape to {len(wanted)} extents (batch axis included); ncnn takes 1 to 5")
    out_axis = p.output_batch_axis
    if out_axis != NO_BATCH_AXIS:
        out_axis += len(wanted) if out_axis < 0 else 0
        if not 0 <= out_axis < len(wanted):
            fail(f"Reshape output_batch_axis {p.output_batch_axis} is out of range for {len(wanted)} extents")
    out = []
    for i, v in enumerate(wanted):
        if v == 0:
            if i >= len(logical):
                fail(f"Reshape copies extent {i} of {shape_str(x)} (with its batch axis), which it lacks")
            v = logical[i]
        if v < -1 or (v == -1 and -1 in out):
            fail(f"Reshape extents {wanted} are not a shape (one -1 at most, no other negatives)")
        out.append(v)
    if -1 in out:
        known = int(np.prod([v for v in out if v != -1]))
        if known == 0 or x.size % known:
            fail(f"Reshape to {wanted} cannot hold the {x.size} values of {shape_str(x)}")
        out[out.index(-1)] = x.size // known
    if int(np.prod(out)) != x.size or 0 in out:
        fail(f"Reshape to {wanted} cannot hold the {x.size} values of {shape_str(x)}")
    if out_axis != NO_BATCH_AXIS:
        if out[out_axis] != 1:
            fail(f"Reshape makes a batch of {out[out_axis]}; the interpreter runs batch 1 only")
        del out[out_axis]
    if not 0 < len(out) <= 4:
        fail(f"Reshape output {out} without its batch axis is not an ncnn Mat of 1 to 4 axes")
    return tuple(out)


def _batch_reshape(p):
    targets: dict[tuple, tuple] = {}

    def step(x, *refs):
        key = (x.shape, *(r.shape for r in refs))
        if key not in targets:
            targets[key] = _batch_target(p, (x, *refs))
        return x.reshape(targets[key])
    return step


@kernel("Reshape", prepare=True)
def reshape(p, weights):
    """The x86 runtime's Reshape: a 1-D target always flattens; 0 copies the input's
    extent of the same name (w, h, d, c), -1 is inferred; a -233 ends the shape.

    With `shape_expr` the extents come from the expression, evaluated on the shapes of
    all input blobs (the first is the data; the others are only read for their shape)."""
    if (p.input_batch_axis, p.output_batch_axis) != (NO_BATCH_AXIS, NO_BATCH_AXIS):
        return _batch_reshape(p)
    if p.shape_expr:
        try:
            ndim = count_terms(p.shape_expr)
        except ExpressionError as exc:
            fail(f"Reshape shape_expr: {exc}")
        if ndim > 4:
            fail(f"Reshape shape_expr {p.shape_expr!r} has {ndim} extents; ncnn holds at most 4")
    else:
        ndim = 4                   # ncnn's rule: the first -233 among w, h, c (and d) ends the shape
        for count, value in ((3, p.d), (2, p.c), (1, p.h), (0, p.w)):
            if value == AUTO:
                ndim = count
    if ndim == 0:
        fail("Reshape with w=-233 produces no blob in ncnn")
    names = {1: "w", 2: "wh", 3: "whc", 4: "whdc"}[ndim]
    fixed = [p[n] for n in names]
    targets: dict[tuple, tuple] = {}           # input shapes -> output shape, worked out once

    def target(x: np.ndarray, given: list[int]) -> tuple:
        if ndim == 1:
            return (x.size,)
        ext = extents(x)
        out = [ext[n] if v == 0 else v for n, v in zip(names, given)]
        if out.count(-1) == 1:
            known = int(np.prod([v for v in out if v != -1]))
            out[out.index(-1)] = x.size // known if known else 0
        if any(v <= 0 for v in out) or int(np.prod(out)) != x.size:
            fail(f"Reshape to {dict(zip(names, given))} cannot hold the {x.size} values of {shape_str(x)}")
        return tuple(reversed(out))

    def given_by_expression(xs) -> list[int]:
        try:
            return evaluate(p.shape_expr, [x.shape for x in xs])
        except ExpressionError as exc:
            fail(f"Reshape shape_expr: {exc}")

    one_blob_only = not p.shape_expr or count_blobs(p.shape_expr) <= 1

    def step(x, *refs):
        if refs and one_blob_only:
            fail("Reshape reads only its first blob, but has more inputs: the real ncnn refuses "
                 "to load it (invalid bottom_count for one_blob_only layer)")
        key = (x.shape, *(r.shape for r in refs)) if refs else x.shape
        shape = targets.get(key)
        if shape is None:
            given = given_by_expression((x, *refs)) if p.shape_expr else fixed
            shape = targets[key] = target(x, given)
        return x.reshape(shape)
    return step


