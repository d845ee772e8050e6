"""pnnx's way of giving input shapes, for users who come from it:

    onnx2ncnn convert model.onnx inputshape=[1,3,224,224]
    onnx2ncnn convert model.onnx inputshape=[1,3,640,640]f32,[1,32]i64 inputshape2=[1,3,320,320]f32,[1,32]i64

and names the files as pnnx does: ncnnparam=OUT.param ncnnbin=OUT.bin (convert's --param/--bin).
Shapes are listed in the order of the model's inputs; a type suffix (f32, i64, ...) must be the
input's ONNX type. With inputshape2, the dims that differ between the two lists stay dynamic
(one .param for both sizes), the others are fixed: pnnx resolves its dynamic dims the same way.
"""
from __future__ import annotations

import re

import numpy as np

from converter.ir import ConversionError

KEYS = ("inputshape", "inputshape2")
TYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "i8": np.int8, "i16": np.int16,
         "i32": np.int32, "i64": np.int64, "u8": np.uint8, "bool": np.bool_}
_ONE = re.compile(r"\[([^\[\]]*)\]([a-z0-9]*)")


def split_pnnx_args(argv: list[str]) -> tuple[list[str], dict[str, str]]:
    """argv without its `inputshape=...`/`inputshape2=...` words, and those words' values."""
    rest, found = [], {}
    for word in argv:
        key, sep, value = word.partition("=")
        if sep and key in KEYS:
            if key in found:
                raise ConversionError(f"{key} given twice")
            found[key] = value
        else:
            rest.append(word)
    return rest, found


OUTPUT_KEYS = {"ncnnparam": "param", "ncnnbin": "bin"}


def split_output_words(argv: list[str]) -> tuple[list[str], dict[str, str]]:
    """argv without pnnx's `ncnnparam=PATH`/`ncnnbin=PATH` words, and {"param"/"bin": PATH}."""
    rest, found = [], {}
    for word in argv:
        key, sep, value = word.partition("=")
        if sep and key in OUTPUT_KEYS:
            if OUTPUT_KEYS[key] in found or not value:
                raise ConversionError(f"{key} given twice" if value else f"{key}= expects a file name")
            found[OUTPUT_KEYS[key]] = value
        else:
            rest.append(word)
    return rest, found


def parse_shape_list(key: str, text: str) -> list[tuple[list[int], str | None]]:
    """'[1,3,224,224]f32,[1,32]i64' -> [([1, 3, 224, 224], 'f32'), ([1, 32], 'i64')]."""
    shapes, end = [], 0
    for match in _ONE.finditer(text):
        between = text[end:match.start()]
        if between not in ("", ","):
            break
        try:
            dims = [int(d) for d in match.group(1).split(",")]
        except ValueError:
            break
        kind = match.group(2) or None
        if kind is not None and kind not in TYPES:
            raise ConversionError(f"{key}: unknown type '{kind}' (use one of {', '.join(TYPES)})")
        shapes.append((dims, kind))
        end = match.end()
    if not shapes or end != len(text) or any(d <= 0 and d != -1 for dims, _ in shapes for d in dims):
        raise ConversionError(f"{key} expects [D1,D2,...] per input, comma-separated, with an optional type "
                              f"(e.g. {key}=[1,3,224,224]f32,[1,32]i64; -1 keeps a dim dynamic), got '{text}'")
    return shapes


def pnnx_input_shapes(found: dict[str, str], inputs: list[tuple[str, np.dtype]]) -> dict[str, list]:
    """{input name: shape with None for dynamic dims} from inputshape (and inputshape2), for the
    model's fed inputs `inputs` (name, dtype) in order."""
    if not found:
        return {}
    if "inputshape" not in found:
        raise ConversionError("inputshape2 needs inputshape (the dims that differ between them stay dynamic)")
    first = parse_shape_list("inputshape", found["inputshape"])
    second = parse_shape_list("inputshape2", found["inputshape2"]) if "inputshape2" in found else None
    if len(first) > len(inputs):
        raise ConversionError(f"inputshape gives {len(first)} shapes, the model has {len(inputs)} input(s): "
                              f"{', '.join(name for name, _ in inputs)}")
    if second is not None and len(second) != len(first):
        raise ConversionError(f"inputshape2 gives {len(second)} shapes, inputshape {len(first)}")
    shapes = {}
    for k, ((dims, kind), (name, dtype)) in enumerate(zip(first, inputs)):
        for key, given in (("inputshape", kind), ("inputshape2", second[k][1] if second else None)):
            if given is not None and np.dtype(TYPES[given]) != np.dtype(dtype):
                raise ConversionError(f"{key}: input '{name}' is {np.dtype(dtype).name} in the model, "
                                      f"the type given is {given}")
        fixed = [None if d == -1 else d for d in dims]
        if second is not None:
            other = second[k][0]
            if len(other) != len(dims):
                raise ConversionError(f"inputshape2: input '{name}' has {len(other)} dims, inputshape {len(dims)}")
            fixed = [d if d == o else None for d, o in zip(fixed, other)]
        shapes[name] = fixed
    return shapes
