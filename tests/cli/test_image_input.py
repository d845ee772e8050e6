"""--input NAME=IMAGE[:options]: PNG/PPM decoded without extra packages, resized and normalized
as the user names, laid out as the input wants."""
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from onnx import helper

from converter.verification.image_input import parse_image_spec, read_image, resize_bilinear
from converter.ir import ConversionError
from onnx_cases import make_model, onnxruntime_outputs
from test_convert_cli import assert_bad_input, run_cli, save


def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def _filter(row: bytes, previous: bytes, kind: int, bpp: int) -> bytes:
    """PNG's encoder side of each filter, straight from the spec's definitions."""
    out = bytearray()
    for i, x in enumerate(row):
        a = row[i - bpp] if i >= bpp else 0
        b = previous[i]
        c = previous[i - bpp] if i >= bpp else 0
        predictor = [0, a, b, (a + b) // 2, _paeth(a, b, c)][kind]
        out.append((x - predictor) & 0xFF)
    return bytes(out)


def write_png(path: Path, pixels: np.ndarray, colour: int, depth: int = 8, palette: np.ndarray | None = None):
    """Rows cycle through all five filters."""
    height = pixels.shape[0]
    raw = pixels.astype(">u2" if depth == 16 else np.uint8).tobytes()
    stride = len(raw) // height
    bpp = max(1, stride // pixels.shape[1])
    body, previous = b"", bytes(stride)
    for y in range(height):
        row = raw[y * stride:(y + 1) * stride]
        body += bytes([y % 5]) + _filter(row, previous, y % 5, bpp)
        previous = row

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    ihdr = struct.pack(">IIBBBBB", pixels.shape[1], height, depth, colour, 0, 0, 0)
    plte = chunk(b"PLTE", palette.astype(np.uint8).tobytes()) if palette is not None else b""
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + plte + chunk(b"IDAT", zlib.compress(body))
                     + chunk(b"IEND", b""))
    return path


RNG = np.random.default_rng(0)
RGB = RNG.integers(0, 256, (7, 9, 3), dtype=np.uint8)


@pytest.mark.parametrize("colour, samples", [(0, 1), (2, 3), (4, 2), (6, 4)])
def test_png_every_filter_and_colour_type(tmp_path, colour, samples):
    pixels = RNG.integers(0, 256, (7, 9, samples), dtype=np.uint8)
    got = read_image(write_png(tmp_path / "a.png", pixels, colour))
    np.testing.assert_array_equal(got, pixels[:, :, :3] if samples >= 3 else pixels[:, :, :1])


def test_png_palette_and_16_bit(tmp_path):
    palette = RNG.integers(0, 256, (4, 3), dtype=np.uint8)
    index = RNG.integers(0, 4, (5, 6, 1), dtype=np.uint8)
    np.testing.assert_array_equal(read_image(write_png(tmp_path / "p.png", index, 3, palette=palette)),
                                  palette[index[:, :, 0]])
    deep = RNG.integers(0, 65536, (5, 6, 3)).astype(np.uint16)
    np.testing.assert_array_equal(read_image(write_png(tmp_path / "d.png", deep, 2, 16)), deep >> 8)


def test_ppm_and_pgm(tmp_path):
    (tmp_path / "a.ppm").write_bytes(b"P6\n# made by hand\n9 7\n255\n" + RGB.tobytes())
    np.testing.assert_array_equal(read_image(tmp_path / "a.ppm"), RGB)
    (tmp_path / "a.pgm").write_bytes(b"P5 9 7 255\n" + RGB[:, :, 0].tobytes())
    np.testing.assert_array_equal(read_image(tmp_path / "a.pgm"), RGB[:, :, :1])


def test_resize_keeps_a_constant_image_and_halves_by_averaging():
    flat = np.full((6, 8, 3), 7.0, np.float32)
    np.testing.assert_allclose(resize_bilinear(flat, 5, 11), 7.0)
    ramp = np.arange(8, dtype=np.float32)[None, :, None].repeat(2, 0)
    np.testing.assert_allclose(resize_bilinear(ramp, 2, 4)[0, :, 0], [0.5, 2.5, 4.5, 6.5])


def test_normalization_and_layout(tmp_path):
    path = write_png(tmp_path / "a.png", RGB, 2)
    spec = parse_image_spec("x", f"{path}:mean=0.5,0.4,0.3,std=0.2,0.25,0.5,order=bgr")
    nchw = spec.to_array("x", [1, 3, 7, 9])
    want = (RGB[:, :, ::-1] / 255.0 - [0.5, 0.4, 0.3]) / [0.2, 0.25, 0.5]
    np.testing.assert_allclose(nchw[0].transpose(1, 2, 0), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(spec.to_array("x", [1, None, None, 3])[0], want, rtol=1e-5, atol=1e-6)
    assert parse_image_spec("x", f"{path}:size=4x3").to_array("x", [1, 3, None, None]).shape == (1, 3, 3, 4)


def test_letterbox_keeps_the_aspect_ratio_and_pads_the_border(tmp_path):
    """A 9x7 image into 18x18: scaled 2x to 18x14, two rows of padding above and below."""
    (tmp_path / "a.ppm").write_bytes(b"P6 9 7 255\n" + RGB.tobytes())
    spec = parse_image_spec("x", f"{tmp_path / 'a.ppm'}:size=18x18,fit=letterbox,pad=114,scale=1")
    array = spec.to_array("x", [1, 3, None, None])[0].transpose(1, 2, 0)
    assert array.shape == (18, 18, 3)
    assert np.all(array[:2] == 114) and np.all(array[16:] == 114)
    np.testing.assert_allclose(array[2:16], resize_bilinear(RGB.astype(np.float32), 14, 18), rtol=1e-6)
    stretched = parse_image_spec("x", f"{tmp_path / 'a.ppm'}:size=18x18,scale=1").to_array("x", [1, 3, 18, 18])
    np.testing.assert_allclose(stretched[0].transpose(1, 2, 0), resize_bilinear(RGB.astype(np.float32), 18, 18), rtol=1e-6)
    wide = parse_image_spec("x", f"{tmp_path / 'a.ppm'}:fit=letterbox,pad=0,scale=1").to_array("x", [1, 3, 7, 18])
    assert np.all(wide[0, :, :, :4] == 0) and np.all(wide[0, :, :, 13:] == 0)     # 9x7 -> 9x7, centred in 18
    np.testing.assert_array_equal(wide[0, :, :, 4:13].transpose(1, 2, 0), RGB)


@pytest.mark.parametrize("options, fragment", [("size=0x3", "bad image option"), ("colour=red", "unknown image option"),
                                               ("fit=crop", "unknown image option"),
                                               ("std=0", "must not be 0"), ("oops", "KEY=VALUE")])
def test_bad_options(options, fragment):
    with pytest.raises(ConversionError, match=fragment):
        parse_image_spec("x", f"a.png:{options}")


WEIGHT = np.random.default_rng(1).standard_normal((4, 3, 3, 3)).astype(np.float32)


def conv_model():
    return make_model([helper.make_node("Conv", ["images", "w"], ["y"], pads=[1, 1, 1, 1])],
                      [("images", ["batch", 3, "height", "width"])], [("y", None)], [("w", WEIGHT)])


def test_verify_and_run_take_an_image(tmp_path):
    model = save(conv_model(), tmp_path / "m.onnx")
    path = write_png(tmp_path / "a.png", RGB, 2)
    image = f"images={path}:size=16x12,mean=0.5,std=0.25"
    result = run_cli("verify", model, "--input", image, "--json")
    assert result.returncode == 0, result.stderr
    assert '"images": [1, 3, 12, 16]' in result.stdout
    assert run_cli("convert", model).returncode == 0
    result = run_cli("run", tmp_path / "m.ncnn.param", tmp_path / "m.ncnn.bin", "--input", image,
                     "-o", tmp_path / "o.npz")
    assert result.returncode == 0, result.stderr
    x = parse_image_spec("images", image.partition("=")[2]).to_array("images", [1, 3, None, None])
    want = onnxruntime_outputs(conv_model(), {"images": x})["y"]
    np.testing.assert_allclose(np.load(tmp_path / "o.npz")["y"], want, rtol=1e-4, atol=1e-4)


def test_jpeg_without_pillow_names_the_fix(tmp_path):
    (tmp_path / "a.jpg").write_bytes(b"\xff\xd8\xff\xe0" + bytes(100))
    result = run_cli("verify", save(conv_model(), tmp_path / "m.onnx"), "--input", f"images={tmp_path / 'a.jpg'}")
    try:
        import PIL  # noqa: F401
    except ImportError:
        assert_bad_input(result, "pip install pillow")
    else:
        assert_bad_input(result, "cannot read image")
