"""Sizes for a model's dynamic input dims when verify (or a generated harness) needs concrete
arrays and the user named none, each with the reason it was chosen.

In order: a dim named like one already chosen takes the same size (ONNX: one name, one size);
an image input's height and width take the size the model says it was exported for (the
`imgsz`-style metadata Ultralytics writes), else 320 (a multiple of 32, which stride-32
backbones need, and a size detectors and OCR models are commonly run at); a leading dim is the
batch, 1; anything else is 64 (no hint in the model). A decoder step's attention mask spans its
past and its new tokens (converter/shapes/decoder_layout.py), so its length is their sum. The
user's --input-shape always wins.
"""
from __future__ import annotations

import re

import onnx

from converter.ir import Graph
from converter.shapes.decoder_layout import is_cross, past_inputs

IMAGE_SIDE = 320
OTHER_EXTENT = 64
SIZE_METADATA = ("imgsz", "img_size", "image_size", "input_size")


def _metadata_side(proto: onnx.ModelProto) -> tuple[list[int], str] | None:
    """[h, w] from the first size-like metadata entry, e.g. Ultralytics' imgsz '[320, 320]'."""
    props = {p.key: p.value for p in proto.metadata_props}
    for key in SIZE_METADATA:
        numbers = [int(n) for n in re.findall(r"\d+", props.get(key, ""))]
        if len(numbers) in (1, 2) and all(n > 0 for n in numbers):
            return (numbers * 2)[:2], f"{key}={props[key]}"
    return None


def _image_axes(shape: list) -> tuple[int, int] | None:
    """(height axis, width axis) of an NCHW or NHWC image input with 1 or 3 channels."""
    if len(shape) != 4:
        return None
    if shape[1] in (1, 3):
        return 2, 3
    if shape[3] in (1, 3):
        return 1, 2
    return None


def example_shapes(proto: onnx.ModelProto, graph: Graph) -> tuple[dict[str, list[int]], list[str]]:
    """{input: shape with every dynamic dim chosen}, and one note per input that had any."""
    initializers = {t.name for t in proto.graph.initializer}
    by_param: dict[str, tuple[int, str]] = {}
    shapes, why = {}, {}
    metadata = _metadata_side(proto)
    for vi in proto.graph.input:
        if vi.name in initializers or vi.name not in graph.tensors or graph.tensors[vi.name].shape is None:
            continue
        t = graph.tensors[vi.name]
        shape = list(t.onnx_shape or t.shape)     # (an input whose axes were merged to fit ncnn: its own)
        dims = vi.type.tensor_type.shape.dim
        image = _image_axes(shape)
        chosen = []
        for i, extent in enumerate(shape):
            if extent is not None:
                continue
            param = dims[i].dim_param if i < len(dims) else ""
            if param and param in by_param:
                value, reason = by_param[param][0], f"as '{param}' elsewhere"
            elif image and i in image and metadata:
                value, reason = metadata[0][image.index(i)], f"the model's metadata {metadata[1]}"
            elif image and i in image:
                value, reason = IMAGE_SIDE, "an image side, a multiple of 32"
            elif i == 0:
                value, reason = 1, "the batch"
            else:
                value, reason = OTHER_EXTENT, "no hint in the model"
            if param:
                by_param.setdefault(param, (value, reason))
            shape[i] = value
            chosen.append(f"dim {i}{f' ({param})' if param else ''} = {value}: {reason}")
        shapes[vi.name] = shape
        if chosen:
            why[vi.name] = chosen
    if MASK in why:
        shapes[MASK], why[MASK] = _mask_spans_the_history(shapes, shapes[MASK], why[MASK], graph)
    return shapes, [f"{name} {shapes[name]} ({'; '.join(chosen)})" for name, chosen in why.items()]


MASK, TOKENS = "attention_mask", "input_ids"


def _mask_spans_the_history(shapes: dict, mask: list, chosen: list[str], graph: Graph) -> tuple[list, list[str]]:
    """A decoder step's (1, P + T) mask, P the first self past's run-time extent and T the tokens'
    (where the mask's length was chosen, not given); a past the files do not read (a merged decoder's
    prefill branch) is no history."""
    pasts = [n for n in past_inputs(shapes) if not is_cross(n) and n in graph.inputs and graph.consumers(n)]
    ids = shapes.get(TOKENS)
    if len(mask) != 2 or not chosen[-1].startswith("dim 1") or not pasts or ids is None or len(ids) != 2 \
            or len(shapes[pasts[0]]) != 4:
        return mask, chosen
    total = shapes[pasts[0]][2] + ids[1]
    return [mask[0], total], [*chosen[:-1], f"dim 1 = {total}: a decoder's mask spans its past and new tokens"]
