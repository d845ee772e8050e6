"""ArgMax: ncnn names the layer but builds leave it out, so a file using it is refused on reading."""
import pytest

import ncnn
from converter.ncnn_side.reader import NcnnFormatError, parse_param

ARGMAX_FILE = "7767517\n2 2\nInput in 0 1 x\nArgMax am 1 1 x y 0=0 1=1\n"


def test_the_real_runtime_cannot_create_argmax(tmp_path):
    assert ncnn.create_layer("ArgMax") is None
    path = tmp_path / "argmax.param"
    path.write_text(ARGMAX_FILE)
    assert ncnn.Net().load_param(str(path)) != 0


def test_reader_refuses_argmax_in_one_line():
    with pytest.raises(NcnnFormatError, match="cannot create layer type ArgMax") as err:
        parse_param(ARGMAX_FILE, "argmax.param")
    assert "\n" not in str(err.value)
