"""Malformed .param/.bin files fail with a one-line NcnnFormatError naming the file and place."""
import struct

import numpy as np
import pytest

from converter.ncnn_side.layers import FP16_FLAG
from converter.ncnn_side.reader import NcnnFormatError, parse_param, read_ncnn
from converter.ncnn_side.writer import save

INPUT_ONLY = "7767517\n1 1\nInput in 0 1 x\n"


def layer(line: str, counts: str = "2 2") -> str:
    """A two-layer file: Input producing 'x', then `line` (on line 4)."""
    return f"7767517\n{counts}\nInput in 0 1 x\n{line}\n"


PARAM_CASES = [
    # (id, text, line of the error, message fragment)
    ("bad magic", "7767518\n1 1\nInput in 0 1 x\n", 1, "bad magic '7767518'"),
    ("empty", "\n\n", None, "empty file"),
    ("no counts", "7767517\n", 1, "missing the 'layer_count blob_count' line"),
    ("counts not numbers", "7767517\n1 x\nInput in 0 1 x\n", 2, "expected 'layer_count blob_count'"),
    ("zero counts", "7767517\n0 0\n", 2, "must be positive"),
    ("too many layers counted", layer("ReLU r 1 1 x y", "3 2"), 2,
     "counts say 3 layers and 2 blobs, the file has 2 layers and 2 blobs"),
    ("too few blobs counted", layer("ReLU r 1 1 x y", "2 1"), 2, "the file has 2 layers and 2 blobs"),
    ("unknown type", layer("FancyOp f 1 1 x y"), 4, "unknown layer type 'FancyOp' (layer 'f')"),
    ("short line", layer("ReLU r 1"), 4, "a layer line needs"),
    ("counts not counts", layer("ReLU r one 1 x y"), 4, "are not counts"),
    ("too few blob names", layer("ReLU r 1 1 x 0=0.1"), 4,
     "declares 1 inputs and 1 outputs but names 1 blobs"),
    ("too many blob names", layer("ReLU r 1 1 x y z"), 4, "but names 3 blobs"),
    ("junk after params", layer("ReLU r 1 1 x y 0=0.1 oops"), 4, "expected id=value, got 'oops'"),
    ("used before produced", layer("ReLU r 1 1 w y"), 4, "uses blob 'w' before any layer produces it"),
    ("own output as input", layer("ReLU r 1 1 y y"), 4, "uses blob 'y' before"),
    ("produced twice", layer("ReLU r 1 1 x x"), 4, "produces blob 'x' that is already produced"),
    ("not a number", layer("ReLU r 1 1 x y 0=0.1x"), 4, "'0.1x' is not a number"),
    ("int not a number", layer("BinaryOp b 1 1 x y 0=1x"), 4, "'1x' is not a number"),
    ("empty value", layer("ReLU r 1 1 x y 0="), 4, "empty value"),
    ("float for int", layer("BinaryOp b 1 1 x y 0=2.0"), 4, "param 0 must be int, got a float"),
    ("string for float", layer("ReLU r 1 1 x y 0=inf"), 4, "param 0 must be float, got a string"),
    ("array for int", layer("BinaryOp b 1 1 x y -23300=1,2"), 4, "must be int, got an array of ints"),
    ("floats for ints", layer("Slice s 1 2 x y z -23300=2,1.0,1.0"), 4,
     "must be ints, got an array of floats"),
    ("number for string", layer("Reshape r 1 1 x y 6=3"), 4, "param 6 must be str, got an int"),
    ("array too short", layer("Slice s 1 2 x y z -23300=3,1,1"), 4, "declares 3 elements but has 2"),
    ("array too long", layer("Slice s 1 2 x y z -23300=1,1,1"), 4, "declares 1 elements but has 2"),
    ("bad array length", layer("Slice s 1 2 x y z -23300=x,1"), 4, "'x' is not a number"),
    ("mixed counted array", layer("Eltwise e 1 1 x y -23301=2,2.0,3"), 4, "mixes int and float"),
    ("mixed int-first array", layer("Eltwise e 1 1 x y 1=2,3.0"), 4, "mixes int and float"),
    ("id too large", layer("ReLU r 1 1 x y 32=1"), 4, "param id 32 is outside ncnn's 0..31"),
    ("negative id", layer("ReLU r 1 1 x y -5=1"), 4, "param id -5 is outside"),
    ("id twice", layer("ReLU r 1 1 x y 0=0.1 0=0.2"), 4, "param 0 is given twice"),
    ("number too long", layer("ReLU r 1 1 x y 0=0.1000000000000001"), 4,
     "longer than the 15 characters ncnn reads"),
    ("int too large", layer("BinaryOp b 1 1 x y 0=4294967296"), 4, "does not fit a 32-bit int"),
    ("unterminated string", layer('Reshape r 1 1 x y 6="0w, 1'), 4, "unterminated string"),
    ("blob name too long", layer("ReLU r 1 1 x " + "y" * 256), 4, "blob name is longer than 255"),
]


@pytest.mark.parametrize("text, line, fragment", [c[1:] for c in PARAM_CASES],
                         ids=[c[0] for c in PARAM_CASES])
def test_malformed_param(text, line, fragment):
    with pytest.raises(NcnnFormatError) as info:
        parse_param(text, "net.param")
    message = str(info.value)
    assert fragment in message
    assert message.startswith(f"net.param:{line}: " if line else "net.param: ")
    assert "\n" not in message


def test_reader_error_is_a_value_error():
    assert issubclass(NcnnFormatError, ValueError)


# ---- .bin ---------------------------------------------------------------------

CONV = "7767517\n2 2\nInput in 0 1 x\nConvolution conv 1 1 x y 0=2 1=1 5=1 6=6\n"  # 6 weights, 2 biases


def write(tmp_path, param: str, data: bytes):
    (tmp_path / "m.param").write_text(param)
    (tmp_path / "m.bin").write_bytes(data)
    return tmp_path / "m.param", tmp_path / "m.bin"


def floats(*values) -> bytes:
    return np.asarray(values, "<f4").tobytes()


def test_flagged_fp32_and_fp16_and_plain_buffers(tmp_path):
    fp32 = struct.pack("<I", 0) + floats(*range(6)) + floats(7, 8)
    fp16 = struct.pack("<I", FP16_FLAG) + np.arange(6, dtype="<f2").tobytes() + floats(7, 8)
    for data in (fp32, fp16):
        conv = read_ncnn(*write(tmp_path, CONV, data)).nodes["conv"]
        np.testing.assert_array_equal(conv.weights[0], np.arange(6, dtype=np.float32))
        np.testing.assert_array_equal(conv.weights[1], [7, 8])


@pytest.mark.parametrize("tag", [0x00000001, 0x3F800000])
def test_another_tag_is_called_a_mismatched_bin(tmp_path, tag):
    """What a .bin written for another .param looks like: float bits where a tag should be."""
    data = struct.pack("<I", tag) + floats(*range(6)) + floats(7, 8)
    with pytest.raises(NcnnFormatError, match=rf"0x{tag:08X} at offset 0 is not the float32/float16/int8 type "
                                              r"tag layer 'conv' .*mismatched or truncated \.bin"):
        read_ncnn(*write(tmp_path, CONV, data))


def test_the_other_float32_tag_reads_as_the_real_ncnn_does(tmp_path):
    from converter.api import load_ncnn
    from converter.ncnn_side.runtime import run_ncnn
    data = struct.pack("<I", 0x0002C056) + floats(*range(6)) + floats(7, 8)
    param, bin_ = write(tmp_path, CONV.replace("0=2 1=1", "0=2 1=1 2=1 3=1"), data)
    x = np.random.default_rng(0).uniform(-1, 1, (3, 4, 5)).astype(np.float32)
    want = run_ncnn(param, bin_, {"x": x}, ["y"])["y"]
    np.testing.assert_allclose(load_ncnn(param, bin_).run({"x": x})["y"], want, rtol=1e-6, atol=1e-6)


def test_int8_weight_tag_reads_int8(tmp_path):
    """0x000D4B38: the weight follows as int8 bytes, padded to 4 (the bias stays float)."""
    data = struct.pack("<I", 0x000D4B38) + bytes([1, 2, 3, 0xFF, 0x81, 6, 0, 0]) + floats(7, 8)
    conv = read_ncnn(*write(tmp_path, CONV, data)).nodes["conv"]
    assert conv.weights[0].dtype == np.int8
    np.testing.assert_array_equal(conv.weights[0], [1, 2, 3, -1, -127, 6])


@pytest.mark.parametrize("cut, missing, what", [
    (4, 4, "'bias' (2 values)"),
    (10, 2, "'weight' (6 values)"),
    (34, 2, "the type tag"),
])
def test_truncated_bin(tmp_path, cut, missing, what):
    data = (struct.pack("<I", 0) + floats(*range(6)) + floats(7, 8))[:-cut]
    with pytest.raises(NcnnFormatError) as info:
        read_ncnn(*write(tmp_path, CONV, data))
    message = str(info.value)
    assert "m.bin: truncated: layer 'conv' (Convolution, " in message and "m.param:4)" in message
    assert what in message and f"{missing} bytes missing" in message


def test_truncated_fp16_padding(tmp_path):
    param = "7767517\n2 2\nInput in 0 1 x\nInnerProduct fc 1 1 x y 0=1 2=3\n"
    data = struct.pack("<I", FP16_FLAG) + np.ones(3, "<f2").tobytes()   # 2 padding bytes missing
    with pytest.raises(NcnnFormatError, match="the padding after weight 'weight' .* 2 bytes missing"):
        read_ncnn(*write(tmp_path, param, data))
    assert read_ncnn(*write(tmp_path, param, data + b"\0\0")).nodes["fc"].weights[0].tolist() == [1, 1, 1]


def test_trailing_bytes(tmp_path):
    data = struct.pack("<I", 0) + floats(*range(6)) + floats(7, 8) + floats(9)
    with pytest.raises(NcnnFormatError, match=r"m.bin: 4 unused bytes after the last weight \(offset 36\)"):
        read_ncnn(*write(tmp_path, CONV, data))


def test_bin_for_a_model_without_weights_must_be_empty(tmp_path):
    with pytest.raises(NcnnFormatError, match="4 unused bytes"):
        read_ncnn(*write(tmp_path, INPUT_ONLY, b"\0" * 4))


def test_params_that_do_not_define_weights(tmp_path):
    param = "7767517\n2 2\nInput in 0 1 x\nGemm g 1 1 x y 6=1 7=2 8=2 10=9\n"
    with pytest.raises(NcnnFormatError, match=r"m.param:4: layer 'g': params do not define its weights"):
        read_ncnn(*write(tmp_path, param, b""))


# ---- files --------------------------------------------------------------------

def test_missing_files(tmp_path):
    param, bin_ = write(tmp_path, INPUT_ONLY, b"")
    with pytest.raises(NcnnFormatError, match=r"nope.param: .param file not found"):
        read_ncnn(tmp_path / "nope.param", bin_)
    with pytest.raises(NcnnFormatError, match=r"nope.bin: .bin file not found"):
        read_ncnn(param, tmp_path / "nope.bin")


def test_binary_param_is_rejected(tmp_path):
    param, bin_ = write(tmp_path, "", b"")
    param.write_bytes(struct.pack("<i", 7767517) + b"\xff\xfe\x00\x01")
    with pytest.raises(NcnnFormatError, match="not a text .param file"):
        read_ncnn(param, bin_)


def test_writer_output_with_a_cut_bin_names_the_layer(tmp_path, make_graph):
    save(make_graph("conv_net"), tmp_path / "m.param", tmp_path / "m.bin")
    data = (tmp_path / "m.bin").read_bytes()
    (tmp_path / "m.bin").write_bytes(data[:-8])
    with pytest.raises(NcnnFormatError, match="layer 'conv2' .* 8 bytes missing"):
        read_ncnn(tmp_path / "m.param", tmp_path / "m.bin")
