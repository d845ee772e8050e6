"""Output extents of Conv, pooling and ConvTranspose as terms of their input's (converter/shapes/symbolic.py):
what SymbolicShapes follows when it is asked to follow windows."""
from __future__ import annotations

from converter.ir import Node
from converter.shapes.symbolic import Term, op

Dims = tuple[Term, ...]
WINDOWED = {"Conv", "MaxPool", "AveragePool", "LpPool"}


def windowed_extents(node: Node, x: Dims, w: Dims | None) -> Dims | None:
    """Conv and pooling: each spatial extent (in + pads - dilation * (k - 1) - 1) // stride + 1, or
    (in + stride - 1) // stride under SAME auto_pad; ceil_mode's rule is not followed."""
    attrs, spatial = node.attrs, len(x) - 2
    kernel = attrs.get("kernel_shape") or (list(w[2:]) if w is not None else None)
    if spatial < 1 or attrs.get("ceil_mode", 0) or kernel is None or len(kernel) != spatial \
            or not all(isinstance(k, int) for k in kernel):
        return None
    strides, dilations = attrs.get("strides") or [1] * spatial, attrs.get("dilations") or [1] * spatial
    pads, auto_pad = attrs.get("pads") or [0] * 2 * spatial, attrs.get("auto_pad", "NOTSET")
    channels = x[1] if node.op != "Conv" else w[0] if w is not None else None
    out = [x[0], channels]
    for i, extent in enumerate(x[2:]):
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            out.append(op("//", op("+", extent, strides[i] - 1), strides[i]))
        elif auto_pad in ("NOTSET", "VALID"):
            pad = 0 if auto_pad == "VALID" else pads[i] + pads[i + spatial]
            reach = op("-", op("+", extent, pad), dilations[i] * (kernel[i] - 1) + 1)
            out.append(op("+", op("//", reach, strides[i]), 1))
        else:
            return None
    return tuple(out)


def transposed_extents(node: Node, x: Dims, w: Dims | None) -> Dims | None:
    """ConvTranspose: stride * (in - 1) + output_padding + dilation * (k - 1) + 1 - pads per spatial
    extent (in * stride under SAME auto_pad); an explicit output_shape is not followed."""
    attrs, spatial = node.attrs, len(x) - 2
    kernel = attrs.get("kernel_shape") or (list(w[2:]) if w is not None else None)
    if spatial < 1 or w is None or attrs.get("output_shape") or kernel is None or len(kernel) != spatial \
            or not all(isinstance(k, int) for k in [*kernel, w[1]]):
        return None
    strides, dilations = attrs.get("strides") or [1] * spatial, attrs.get("dilations") or [1] * spatial
    pads, auto_pad = attrs.get("pads") or [0] * 2 * spatial, attrs.get("auto_pad", "NOTSET")
    extra = attrs.get("output_padding") or [0] * spatial
    out = [x[0], w[1] * attrs.get("group", 1)]
    for i, extent in enumerate(x[2:]):
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            out.append(op("*", extent, strides[i]))
        elif auto_pad in ("NOTSET", "VALID"):
            pad = 0 if auto_pad == "VALID" else pads[i] + pads[i + spatial]
            grow = extra[i] + dilations[i] * (kernel[i] - 1) + 1 - pad
            out.append(op("+", op("*", strides[i], op("-", extent, 1)), grow))
        else:
            return None
    return tuple(out)
