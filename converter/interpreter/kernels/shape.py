"""Data-movement layers: constants, Split, Concat, Slice, Crop, Reshape, Flatten, Permute, Padding."""
from __future__ import annotations

import numpy as np

from ...expression import ExpressionError, count_blobs, count_terms, evaluate
from ..registry import extents, fail, kernel, shape_str

F32 = np.float32
AUTO = -233   # ncnn's "not given / rest / keep" marker in Slice, Crop and Reshape


@kernel("Input")
def input_(p, weights):
    fail("Input layers take their blob from the feeds")


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


@kernel("Split", outputs=True)
def split(p, weights, x, n_outputs):
    return (x,) * n_outputs


@kernel("Noop")
def noop(p, weights, *xs):
    return xs


@kernel("Flatten")
def flatten(p, weights, x):
    return x.reshape(-1)


def _axis(axis: int, x: np.ndarray, layer: str) -> int:
    positive = axis + x.ndim if axis < 0 else axis
    if not 0 <= positive < x.ndim:
        fail(f"{layer} axis {axis} is out of range for shape {shape_str(x)}")
    return positive


@kernel("Concat")
def concat(p, weights, *xs):
    axis = _axis(p.axis, xs[0], "Concat")
    for x in xs[1:]:
        if x.ndim != xs[0].ndim or any(a != b for i, (a, b) in enumerate(zip(x.shape, xs[0].shape)) if i != axis):
            fail(f"Concat on axis {axis} needs equal other extents, got "
                 + ", ".join(shape_str(x) for x in xs))
    return np.concatenate(xs, axis=axis)


def _slice_sizes(p, total: int, n: int) -> list[int]:
    sizes, start = [], 0
    for i in range(n):
        if len(p.indices):
            if i == n - 1:
                size = total - start
            elif i < len(p.indices):
                size = (p.indices[i] + total if p.indices[i] < 0 else p.indices[i]) - start
            else:
                fail(f"Slice has {n} outputs but only {len(p.indices)} indices")
        elif i < len(p.slices):
            size = p.slices[i]
            if size == AUTO:
                size = (total - start) // (n - i)
        else:
            fail(f"Slice has {n} outputs but only {len(p.slices)} slices")
        if size <= 0 or start + size > total:
            fail(f"Slice part {i} would span [{start}, {start + size}) of an axis of {total}")
        sizes.append(size)
        start += size
    return sizes


@kernel("Slice", outputs=True)
def slice_(p, weights, x, n_outputs):
    axis = 0 if x.ndim == 1 else _axis(p.axis, x, "Slice")
    sizes = _slice_sizes(p, x.shape[axis], n_outputs)
    ends = np.cumsum(sizes)
    lead = (slice(None),) * axis
    return tuple(x[lead + (slice(end - size, end),)] for size, end in zip(sizes, ends))


# ---- Crop ------------------------------------------------------------------------

_CROP_AXES = {1: "w", 2: "hw", 3: "chw", 4: "cdhw"}   # ncnn axis names in numpy order


def _crop_numpy_style(x: np.ndarray, starts, ends, axes) -> list[tuple[int, int]]:
    """(offset, size) per numpy axis from starts/ends/axes (ncnn: end 0 means 'to the end')."""
    roi = [(0, n) for n in x.shape]
    axes = list(axes) if len(axes) else list(range(x.ndim))
    for i, axis in enumerate(axes):
        if i >= len(starts) or i >= len(ends):
            fail(f"Crop has {len(axes)} axes but {len(starts)} starts and {len(ends)} ends")
        axis = 0 if x.ndim == 1 else (axis + x.ndim if axis < 0 else axis)
        if not 0 <= axis < x.ndim:
            continue                      # ncnn ignores axes it does not have
        n, start, end = x.shape[axis], starts[i], ends[i]
        start = 0 if start == AUTO else start
        end = n if end == AUTO else end
        offset = start if start >= 0 else n + start
        roi[axis] = (offset, min(n, end if end > 0 else n + end) - offset)
    return roi


def _crop_expressions(p, xs) -> list[tuple[int, int]]:
    """starts/ends/axes evaluated on the shapes of all the layer's inputs (crop.cpp eval_crop_expr)."""
    try:
        lists = [evaluate(e, [x.shape for x in xs]) if e else [] for e in
                 (p.starts_expr, p.ends_expr, p.axes_expr)]
    except ExpressionError as exc:
        fail(f"Crop expression: {exc}")
    return _crop_numpy_style(xs[0], *lists)


def _crop_offsets(p, x: np.ndarray) -> list[tuple[int, int]]:
    names = _CROP_AXES[x.ndim]
    roi = []
    for name, n in zip(names, x.shape):
        offset, offset2, out = p[name + "offset"], p[name + "offset2"], p["out" + name]
        size = n - offset - offset2
        roi.append((offset, size if out == AUTO else min(out, size)))
    return roi


def _crop_to_reference(p, x: np.ndarray, ref: np.ndarray) -> list[tuple[int, int]]:
    names, ref_ext = _CROP_AXES[x.ndim], extents(ref)
    roi = []
    for name, n in zip(names, x.shape):
        keep_c = name == "c" and ref.ndim != x.ndim
        roi.append((p[name + "offset"], n if keep_c else ref_ext[name]))
    return roi


@kernel("Crop")
def crop(p, weights, x, *refs):
    if p.starts_expr and p.ends_expr:
        if not p.axes_expr:
            fail("Crop with starts/ends expressions but no axes expression (21=): the real ncnn crashed")
        reads = max(count_blobs(e) for e in (p.starts_expr, p.ends_expr, p.axes_expr))
        if refs and reads <= 1:
            fail("Crop's expressions read only its first blob, but it has more inputs: the real ncnn "
                 "refuses to load it (invalid bottom_count for one_blob_only layer)")
        roi = _crop_expressions(p, (x, *refs))
    elif refs:
        if len(refs) > 1:
            fail(f"Crop takes one reference blob, got {len(refs)}")
        if p.woffset == AUTO:
            fail("Crop with woffset=-233 reads its roi from a blob; not supported by the interpreter")
        roi = _crop_to_reference(p, x, refs[0])
    elif len(p.starts) and len(p.ends):
        roi = _crop_numpy_style(x, p.starts, p.ends, p.axes)
    else:
        roi = _crop_offsets(p, x)
    for (offset, size), n in zip(roi, x.shape):
        if size <= 0 or offset < 0 or offset + size > n:
            fail(f"Crop roi (offset, size) {roi} does not fit shape {shape_str(x)}")
    return x[tuple(slice(o, o + s) for o, s in roi)]


# ---- Reshape ---------------------------------------------------------------------

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


# ---- Permute ---------------------------------------------------------------------

# each order_type lists the input axis that becomes output w, h, (d,) c - as in ncnn
_PERMUTE_3D = ["whc", "hwc", "wch", "cwh", "hcw", "chw"]
_PERMUTE_4D = ["whdc", "hwdc", "wdhc", "dwhc", "hdwc", "dhwc", "whcd", "hwcd", "wchd", "cwhd",
               "hcwd", "chwd", "wdch", "dwch", "wcdh", "cwdh", "dcwh", "cdwh", "hdcw", "dhcw",
               "hcdw", "chdw", "dchw", "cdhw"]


@kernel("Permute")
def permute(p, weights, x):
    if x.ndim == 1:
        return x
    if x.ndim == 2:
        if p.order_type not in (0, 1):
            fail(f"Permute order_type {p.order_type} on a 2-D blob leaves ncnn's output empty")
        return x if p.order_type == 0 else np.ascontiguousarray(x.T)
    table, axes = (_PERMUTE_3D, "chw") if x.ndim == 3 else (_PERMUTE_4D, "cdhw")
    if not 0 <= p.order_type < len(table):
        fail(f"Permute order_type {p.order_type} is out of range for a {x.ndim}-D blob")
    order = [axes.index(name) for name in reversed(table[p.order_type])]
    return np.ascontiguousarray(x.transpose(order))


# ---- Padding ---------------------------------------------------------------------

@kernel("Padding")
def padding(p, weights, x):
    pads = [(p.top, p.bottom), (p.left, p.right)]
    if x.ndim == 1:
        pads = pads[1:]
    elif x.ndim == 3:
        pads = [(p.front, p.behind)] + pads
    elif x.ndim == 4:
        pads = [(0, 0), (p.front, p.behind)] + pads
    if min(v for pair in pads for v in pair) < 0:
        fail(f"negative Padding {pads} is not supported by the interpreter")
    if not any(v for pair in pads for v in pair):
        return x
    if p.type == 0:
        out = np.pad(x, pads, constant_values=F32(p.value))
        if p.per_channel_pad_data_size and x.ndim >= 3:
            values = weights[0].astype(F32)
            if values.size < out.shape[0]:
                fail(f"{values.size} per-channel pad values for {out.shape[0]} channels")
            inner = np.zeros(out.shape, dtype=bool)
            inner[tuple(slice(a, a + n) for (a, _), n in zip(pads, x.shape))] = True
            out = np.where(inner, out, values[:out.shape[0]].reshape((-1,) + (1,) * (x.ndim - 1)))
        return out
    if p.type == 1:
        return np.pad(x, pads, mode="edge")
    if p.type == 2:
        for (before, after), n in zip(pads, x.shape):
            if max(before, after) >= n:
                fail(f"reflect padding of {max(before, after)} needs an extent above it, got {n}")
        return np.pad(x, pads, mode="reflect")
    fail(f"unknown Padding type {p.type}")
