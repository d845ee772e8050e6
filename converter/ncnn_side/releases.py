"""Which ncnn release first reads each layer, param and op code: the data behind --target-ncnn and
the `ncnn_min_version` every conversion records.

Releases are ncnn's tag dates (YYYYMMDD; the pip package's version is 1.0.<date>). The first
release of a layer is the first tag whose src/CMakeLists.txt registers it (ncnn_add_layer); of a
param, the first tag whose src/layer/<name>.cpp load_param reads that id; of a BinaryOp/UnaryOp
code, the first tag whose header names it (Tencent/ncnn history, read 2026-11-28). What the mirror's
newest commit (2026-07) has and the 20260526 tag lacks is dated with the newest pip release,
20261020. tests/releases runs the files in the pip releases and checks what this table implies.

Only what a file onnx2ncnn writes can hold is listed: layers of converter/ncnn_side/layers.py, and params
younger than their layer. An old runtime skips a param id it does not know (the layer then computes
with its old behaviour, the param's default), but cannot parse a string value at all before
STRING_PARAMS: so a numeric param needs its release only when it differs from its default.
"""
from __future__ import annotations

# the oldest release onnx2ncnn writes files for: the oldest its tests run the files in (tests/releases)
OLDEST = 20240410
# the newest release this table knows: the default --target-ncnn
NEWEST = 20261020
# releases the tests run the files in, each in its own pip environment
TESTED = (20240410, 20250503, 20260526, 20261020)

LAYERS = {
    **dict.fromkeys(("AbsVal", "BatchNorm", "Bias", "BNLL", "Concat", "Convolution", "Crop",
                     "Deconvolution", "Dropout", "Eltwise", "ELU", "Embed", "Exp", "Flatten",
                     "InnerProduct", "Input", "Log", "LRN", "MemoryData", "Pooling", "Power", "PReLU",
                     "Reduction", "ReLU", "Reshape", "Scale", "Sigmoid", "Slice", "Softmax", "Split",
                     "TanH", "Threshold", "Tile", "RNN", "LSTM"), 20170724),
    "BinaryOp": 20170809, "UnaryOp": 20170809,
    "ConvolutionDepthWise": 20170919, "Padding": 20170919,
    **dict.fromkeys(("Squeeze", "ExpandDims", "Normalize", "Permute", "Interp"), 20171017),
    "DeconvolutionDepthWise": 20171225, "ShuffleChannel": 20171225,
    "InstanceNorm": 20180314, "Clip": 20180704, "Reorg": 20180704,
    "Quantize": 20180830, "Dequantize": 20180830, "Requantize": 20190320, "Cast": 20190611,
    "HardSigmoid": 20190908, "SELU": 20190908, "HardSwish": 20190908, "Noop": 20191113,
    "PixelShuffle": 20200226, "DeepCopy": 20200413,
    "Mish": 20200616, "StatisticsPooling": 20200616, "Swish": 20200616,
    "Gemm": 20200916, "GroupNorm": 20200916, "LayerNorm": 20200916, "Softplus": 20201208,
    "GRU": 20210124, "MultiHeadAttention": 20210322, "GELU": 20210322,
    "Convolution1D": 20210720, "Pooling1D": 20210720, "ConvolutionDepthWise1D": 20211122,
    "Convolution3D": 20211208, "ConvolutionDepthWise3D": 20211208, "Pooling3D": 20211208,
    "MatMul": 20220216,
    **dict.fromkeys(("Deconvolution1D", "DeconvolutionDepthWise1D", "Deconvolution3D",
                     "DeconvolutionDepthWise3D"), 20220420),
    "Einsum": 20220701, "DeformableConv2D": 20220729,
    "Fold": 20221128, "Unfold": 20221128, "GridSample": 20221128, "CumulativeSum": 20230223,
    "Erf": 20231027, "Diag": 20231027, "CELU": 20231027, "Shrink": 20231027,
    "RMSNorm": 20240820, "Spectrogram": 20241226, "InverseSpectrogram": 20241226,
    "Flip": 20250916, "SDPA": 20260113, "RotaryEmbed": 20260113,
}

# (layer, param id) -> first release, for params younger than their layer (and 2019 or later)
PARAMS = {
    **{(conv, 19): 20220216 for conv in ("Convolution", "ConvolutionDepthWise", "Convolution1D",
                                           "ConvolutionDepthWise1D")},          # dynamic weight
    **{(deconv, 28): 20240102 for deconv in ("Deconvolution", "DeconvolutionDepthWise", "Deconvolution1D",
                                               "DeconvolutionDepthWise1D")},    # dynamic weight
    **{("Crop", pid): 20211208 for pid in (13, 14, 15)},                          # depth offsets/extents
    # expressions: parsed since 20250428, but a Crop with them crashes or fails (-100) on x86 in the pip
    # releases 20250503 and 20250916 (starts "0" alike); 20260114 computes them
    **{("Crop", pid): 20260113 for pid in (19, 20, 21)},
    ("Embed", 18): 20241226,
    ("ExpandDims", 11): 20221128, ("Squeeze", 11): 20221128,
    **{("Gemm", pid): 20230223 for pid in (*range(4, 15), 20, 21, 22)},          # constant operands
    ("Gemm", 18): 20241226,
    ("GridSample", 3): 20231027,
    ("GRU", 8): 20240820, ("LSTM", 8): 20240820, ("RNN", 8): 20240820, ("LSTM", 3): 20221128,
    ("Input", 11): 20211208, ("MemoryData", 11): 20220729, ("MemoryData", 21): 20231027,
    ("Interp", 9): 20250428,                                                      # size expression
    ("MultiHeadAttention", 3): 20221128, ("MultiHeadAttention", 4): 20221128,
    ("MultiHeadAttention", 5): 20230517, ("MultiHeadAttention", 6): 20240820,
    ("MultiHeadAttention", 7): 20260113, ("MultiHeadAttention", 18): 20241226,
    ("Reduction", 5): 20220216,
    ("Reshape", 6): 20250428,                                                     # shape expression
    ("Reshape", 11): 20211208, ("Reshape", 12): 20261020, ("Reshape", 13): 20261020,
    ("Slice", 2): 20231027, ("Tile", 2): 20220216,
    # measured, not from load_param: SDPA with a mask input (5=1) computed other numbers in pip
    # 20260526 (bert_tiny's logits 2.8 off) and matches onnxruntime in 20261020 (tests/releases)
    ("SDPA", 5): 20261020,
}

# ParamDict reads string values (id="...") from this release on; older ones fail to parse the file
STRING_PARAMS = 20250428

# op codes younger than their layer: BinaryOp param 0, UnaryOp param 0
BINARY_OP_TYPES = {9: 20230223, 10: 20230223, 11: 20230223, **dict.fromkeys(range(12, 19), 20260526)}
UNARY_OP_TYPES = {17: 20230223, 18: 20230816, 19: 20230816, **dict.fromkeys(range(20, 28), 20260526)}
OP_CODES = {"BinaryOp": BINARY_OP_TYPES, "UnaryOp": UNARY_OP_TYPES}

# what a param does, for messages
PARAM_NAMES = {("Reshape", 6): "shape expression", ("Interp", 9): "size expression",
               ("Crop", 19): "starts expression", ("Crop", 20): "ends expression",
               ("Crop", 21): "axes expression", ("MultiHeadAttention", 6): "scale",
               ("MultiHeadAttention", 7): "kv_cache"}


def parse_release(text: str | int) -> int:
    """'20240410', '1.0.20240410' (the pip version) -> 20240410; ValueError with the reason."""
    digits = str(text).strip().removeprefix("1.0.")
    if len(digits) != 8 or not digits.isdigit():
        raise ValueError(f"an ncnn release is a date YYYYMMDD such as {OLDEST} (or the pip version "
                         f"1.0.{OLDEST}), got '{text}'")
    return int(digits)


def param_release(op: str, pid: int, value, default) -> int | None:
    """The release a param needs, or None where every release that has the layer reads it."""
    if isinstance(value, str):
        return None if value == default else max(STRING_PARAMS, PARAMS.get((op, pid), 0))
    since = PARAMS.get((op, pid))
    if since is None or _same(value, default):
        return None
    return since


def _same(value, default) -> bool:
    if isinstance(value, (list, tuple)) or isinstance(default, (list, tuple)):
        return list(value or ()) == list(default or ())
    return default is not None and float(value) == float(default)


def describe_param(op: str, pid: int) -> str:
    what = PARAM_NAMES.get((op, pid))
    return f"{op} param {pid}" + (f" ({what})" if what else "")
