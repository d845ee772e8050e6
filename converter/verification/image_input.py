"""Image files as model inputs: `--input images=cat.png:size=320x320,mean=0.485,0.456,0.406,std=...`.

The pixels (RGB, or gray) are resized to `size` (W x H; default: the input's fixed height and
width, else the image's own), multiplied by `scale` (default 1/255), normalized as (x - mean) / std
per channel (defaults 0 and 1); `fit=letterbox` keeps the aspect ratio and pads the rest with `pad`
(default 114, as detectors are fed) instead of stretching; put in BGR order with `order=bgr`, and laid out as the input wants
(NCHW, or NHWC when the last axis holds the channels), with a batch of one.

PNG and binary PPM/PGM are decoded here (zlib is all PNG needs); other formats (JPEG, ...)
use Pillow when it is installed (`pip install pillow`), and are refused in one line otherwise.
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from converter.ir import ConversionError

IMAGE_SUFFIXES = {".png", ".ppm", ".pgm", ".pnm", ".jpg", ".jpeg", ".bmp", ".webp", ".tif", ".tiff", ".gif"}
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PNG_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}       # colour type -> samples per pixel


@dataclass
class ImageSpec:
    path: Path
    size: tuple[int, int] | None = None             # (width, height)
    mean: list[float] = field(default_factory=lambda: [0.0])
    std: list[float] = field(default_factory=lambda: [1.0])
    scale: float = 1 / 255
    bgr: bool = False
    letterbox: bool = False                         # fit=letterbox: scaled to fit, centred, padded
    pad: float = 114.0                              # the letterbox's fill, a pixel value (0..255)

    def to_array(self, name: str, shape) -> np.ndarray:
        """The image as input `name` of ONNX shape `shape` (None: a dynamic dim) takes it."""
        if shape is None or len(shape) != 4 or (shape[1] not in (1, 3, None) and shape[3] not in (1, 3)):
            raise ConversionError(f"--input {name}: an image needs a 4-D input with 1 or 3 channels, "
                                  f"the input's shape is {shape}")
        nhwc = shape[1] not in (1, 3, None) or (shape[1] is None and shape[3] in (1, 3))
        channels, (height, width) = (shape[3], shape[1:3]) if nhwc else (shape[1], shape[2:4])
        pixels = read_image(self.path)
        if self.size is not None:
            width, height = self.size
        height = height or pixels.shape[0]
        width = width or pixels.shape[1]
        if self.letterbox:
            pixels = letterboxed(pixels.astype(np.float32), height, width, self.pad)
        elif (height, width) != pixels.shape[:2]:
            pixels = resize_bilinear(pixels.astype(np.float32), height, width)
        channels = channels or pixels.shape[2]
        pixels = pixels.astype(np.float32)
        if channels == 1 and pixels.shape[2] == 3:
            pixels = pixels @ np.array([[0.299], [0.587], [0.114]], np.float32)    # ITU-R 601 luma
        elif channels == 3 and pixels.shape[2] == 1:
            pixels = np.repeat(pixels, 3, axis=2)
        if self.bgr:
            pixels = pixels[:, :, ::-1]
        mean, std = (np.asarray(v, np.float32) for v in (self.mean, self.std))
        if mean.size not in (1, channels) or std.size not in (1, channels):
            raise ConversionError(f"--input {name}: mean and std need 1 or {channels} values")
        pixels = (pixels * np.float32(self.scale) - mean) / std
        array = pixels[None] if nhwc else pixels.transpose(2, 0, 1)[None]
        return np.ascontiguousarray(array, dtype=np.float32)


def letterboxed(pixels: np.ndarray, height: int, width: int, pad: float) -> np.ndarray:
    """`pixels` scaled by one factor to fit height x width, centred, the border filled with `pad`."""
    h, w = pixels.shape[:2]
    factor = min(height / h, width / w)
    inner_h, inner_w = max(1, round(h * factor)), max(1, round(w * factor))
    if (inner_h, inner_w) != (h, w):
        pixels = resize_bilinear(pixels, inner_h, inner_w)
    out = np.full((height, width, pixels.shape[2]), pad, np.float32)
    top, left = (height - inner_h) // 2, (width - inner_w) // 2
    out[top:top + inner_h, left:left + inner_w] = pixels
    return out


def parse_image_spec(name: str, text: str) -> ImageSpec:
    """'cat.png:size=320x320,mean=0.5,0.5,0.5,std=0.5,0.5,0.5,scale=0.0039,order=bgr'."""
    path, _, options = text.partition(":")
    spec = ImageSpec(Path(path))
    key, values = None, {}
    for token in filter(None, options.split(",")):
        if "=" in token:
            key, token = token.split("=", 1)
            values[key] = []
        if key is None:
            raise ConversionError(f"--input {name}: expected KEY=VALUE options after ':', got '{token}'")
        values[key].append(token)
    try:
        for key, items in values.items():
            if key == "size":
                w, _, h = items[0].lower().partition("x")
                spec.size = (int(w), int(h or w))
                if min(spec.size) <= 0:
                    raise ValueError
            elif key in ("mean", "std"):
                setattr(spec, key, [float(v) for v in items])
            elif key == "scale":
                spec.scale = float(items[0])
            elif key == "fit" and items[0].lower() in ("stretch", "letterbox"):
                spec.letterbox = items[0].lower() == "letterbox"
            elif key == "pad":
                spec.pad = float(items[0])
            elif key == "order" and items[0].lower() in ("rgb", "bgr"):
                spec.bgr = items[0].lower() == "bgr"
            else:
                raise ConversionError(f"--input {name}: unknown image option '{key}={','.join(items)}' "
                                      f"(size=WxH, mean=..., std=..., scale=..., order=rgb|bgr, fit=stretch|letterbox, pad=...)")
    except ValueError:
        raise ConversionError(f"--input {name}: bad image option in '{options}' (e.g. size=320x320,"
                              f"mean=0.485,0.456,0.406,std=0.229,0.224,0.225)") from None
    if any(v == 0 for v in spec.std):
        raise ConversionError(f"--input {name}: std must not be 0")
    return spec


def is_image_path(text: str) -> bool:
    return Path(text.partition(":")[0]).suffix.lower() in IMAGE_SUFFIXES


def read_image(path: Path) -> np.ndarray:
    """uint8 pixels, (height, width, 1 or 3); alpha is dropped."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConversionError(f"cannot read image {path}: {exc.strerror or exc}") from None
    if data.startswith(PNG_SIGNATURE):
        pixels = decode_png(data, path)
    elif data[:2] in (b"P5", b"P6"):
        pixels = decode_pnm(data, path)
    else:
        pixels = _decode_with_pillow(path)
    return pixels[:, :, :3] if pixels.shape[2] >= 3 else pixels[:, :, :1]


def _decode_with_pillow(path: Path) -> np.ndarray:
    try:
        from PIL import Image
    except ImportError:
        raise ConversionError(f"cannot read image {path}: PNG and PPM/PGM are read as they are; for "
                              f"{path.suffix or 'this format'} install Pillow (pip install pillow) or "
                              f"save the image as PNG") from None
    try:
        with Image.open(path) as image:
            return np.asarray(image.convert("RGB"))
    except Exception as exc:
        raise ConversionError(f"cannot read image {path}: {exc}") from None


def decode_pnm(data: bytes, path: Path) -> np.ndarray:
    """Binary PGM (P5) / PPM (P6): a header of magic, width, height, maxval, then samples."""
    fields, pos = [], 2
    while len(fields) < 3:
        while pos < len(data) and data[pos:pos + 1].isspace():
            pos += 1
        if data[pos:pos + 1] == b"#":
            pos = data.find(b"\n", pos) + 1 or len(data)
            continue
        end = pos
        while end < len(data) and data[end:end + 1].isdigit():
            end += 1
        if end == pos:
            raise ConversionError(f"cannot read image {path}: a damaged PPM/PGM header")
        fields.append(int(data[pos:end]))
        pos = end
    width, height, maxval = fields
    channels = 3 if data[:2] == b"P6" else 1
    dtype = ">u2" if maxval > 255 else "u1"
    count = width * height * channels
    body = data[pos + 1:pos + 1 + count * np.dtype(dtype).itemsize]
    if len(body) < count * np.dtype(dtype).itemsize or not 0 < maxval < 65536:
        raise ConversionError(f"cannot read image {path}: the file is truncated or damaged")
    pixels = np.frombuffer(body, dtype).reshape(height, width, channels).astype(np.float64)
    return np.round(pixels * 255 / maxval).astype(np.uint8)


def decode_png(data: bytes, path: Path) -> np.ndarray:
    """A non-interlaced PNG of 8 or 16 bits per sample (gray, RGB, palette, with alpha)."""
    pos, header, palette, idat = 8, None, None, []
    try:
        while pos < len(data):
            length, kind = struct.unpack(">I4s", data[pos:pos + 8])
            body = data[pos + 8:pos + 8 + length]
            pos += 12 + length
            if kind == b"IHDR":
                header = struct.unpack(">IIBBBBB", body)
            elif kind == b"PLTE":
                palette = np.frombuffer(body, np.uint8).reshape(-1, 3)
            elif kind == b"IDAT":
                idat.append(body)
            elif kind == b"IEND":
                break
        width, height, depth, colour, _, _, interlace = header
        raw = zlib.decompress(b"".join(idat))
    except (struct.error, TypeError, zlib.error):
        raise ConversionError(f"cannot read image {path}: the PNG is truncated or damaged") from None
    if interlace or depth not in (8, 16) or colour not in PNG_CHANNELS or (colour == 3 and palette is None):
        raise ConversionError(f"cannot read image {path}: interlaced or under-8-bit PNGs are not read "
                              f"here; save it as 8-bit non-interlaced PNG, or install Pillow")
    samples = PNG_CHANNELS[colour]
    bpp = samples * depth // 8                 # bytes per pixel, the filters' stride
    stride = width * bpp
    if len(raw) < height * (stride + 1):
        raise ConversionError(f"cannot read image {path}: the PNG's pixel data is truncated")
    rows = _unfilter(raw, height, stride, bpp, path)
    pixels = np.frombuffer(rows, ">u2" if depth == 16 else np.uint8).reshape(height, width, samples)
    if depth == 16:
        pixels = (pixels >> 8).astype(np.uint8)
    if colour == 3:
        pixels = palette[np.minimum(pixels[:, :, 0], len(palette) - 1)]
    return pixels


def _unfilter(raw: bytes, height: int, stride: int, bpp: int, path: Path) -> bytes:
    """Undo PNG's per-row filters (none, sub, up, average, Paeth)."""
    out = bytearray(height * stride)
    previous = bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        row = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if kind == 1:
            for i in range(bpp, stride):
                row[i] = (row[i] + row[i - bpp]) & 0xFF
        elif kind == 2:
            row = bytearray((np.frombuffer(row, np.uint8) + np.frombuffer(previous, np.uint8)).tobytes())
        elif kind == 3:
            for i in range(stride):
                left = row[i - bpp] if i >= bpp else 0
                row[i] = (row[i] + ((left + previous[i]) >> 1)) & 0xFF
        elif kind == 4:
            for i in range(stride):
                a = row[i - bpp] if i >= bpp else 0
                b, c = previous[i], previous[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                row[i] = (row[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        elif kind != 0:
            raise ConversionError(f"cannot read image {path}: the PNG is damaged (filter {kind} in row {y})")
        out[y * stride:(y + 1) * stride] = row
        previous = row
    return bytes(out)


def resize_bilinear(pixels: np.ndarray, height: int, width: int) -> np.ndarray:
    """Bilinear resize with half-pixel centres (OpenCV's INTER_LINEAR without its rounding)."""
    def taps(size_in: int, size_out: int):
        x = np.clip((np.arange(size_out) + 0.5) * size_in / size_out - 0.5, 0, size_in - 1)
        low = np.floor(x).astype(np.int64)
        high = np.minimum(low + 1, size_in - 1)
        return low, high, (x - low).astype(np.float32)
    y0, y1, fy = taps(pixels.shape[0], height)
    x0, x1, fx = taps(pixels.shape[1], width)
    top = pixels[y0][:, x0] * (1 - fx)[None, :, None] + pixels[y0][:, x1] * fx[None, :, None]
    bottom = pixels[y1][:, x0] * (1 - fx)[None, :, None] + pixels[y1][:, x1] * fx[None, :, None]
    return top * (1 - fy)[:, None, None] + bottom * fy[:, None, None]
