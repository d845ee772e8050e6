"""pnnx's inputshape=/inputshape2= words, beside --input-shape."""
import json

import pytest

from converter.ir import ConversionError
from converter.onnx_side.pnnx_args import parse_shape_list
from onnx_cases import MODELS
from test_convert_cli import assert_bad_input, run_cli


def input_shapes(*args):
    result = run_cli("convert", *args, "--json")
    assert result.returncode == 0, result.stderr
    return [e["onnx_shape"] for e in json.loads(result.stdout)["inputs"]]


def test_parse_shape_list_with_types():
    assert parse_shape_list("inputshape", "[1,3,224,224]f32,[1,32]i64") == [([1, 3, 224, 224], "f32"), ([1, 32], "i64")]
    assert parse_shape_list("inputshape", "[1,3,-1,-1]") == [([1, 3, -1, -1], None)]
    for bad in ("[1,3", "1,3", "[1,x]", "[1,2]f32;[3]", "[0,2]"):
        with pytest.raises(ConversionError, match="expects"):
            parse_shape_list("inputshape", bad)


def test_inputshape_fixes_dims_and_inputshape2_keeps_the_differing_ones_dynamic(tmp_path):
    model = MODELS / "cnn_dynamic.onnx"
    assert input_shapes(model, "-o", tmp_path, "inputshape=[1,3,32,32]") == [[1, 3, 32, 32]]
    assert input_shapes(model, "-o", tmp_path, "inputshape=[1,3,32,32]", "inputshape2=[1,3,32,48]") == [[1, 3, 32, None]]


def test_several_inputs_in_order_with_their_types(tmp_path):
    shapes = input_shapes(MODELS / "bert_tiny.onnx", "-o", tmp_path, "inputshape=[1,8]i64,[1,8]i64")
    assert shapes == [[1, 8], [1, 8]]


@pytest.mark.parametrize("words, fragment", [
    (["inputshape=[1,8]f32"], "is int64 in the model, the type given is f32"),
    (["inputshape=[1,8],[1,8],[1,8]"], "gives 3 shapes, the model has 2 input(s)"),
    (["inputshape2=[1,8]"], "inputshape2 needs inputshape"),
    (["inputshape=[1,8]", "inputshape2=[1,8],[1,8]"], "inputshape2 gives 2 shapes, inputshape 1"),
    (["inputshape=[1,8]", "--input-shape", "input_ids=1,4"], "given both by inputshape and --input-shape"),
])
def test_mistakes_are_one_line(tmp_path, words, fragment):
    assert_bad_input(run_cli("convert", MODELS / "bert_tiny.onnx", "-o", tmp_path, *words), fragment)


def test_verify_takes_inputshape():
    result = run_cli("verify", MODELS / "cnn_dynamic.onnx", "inputshape=[1,3,24,40]", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["inputs"] == {"input": [1, 3, 24, 40]}
