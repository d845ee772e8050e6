"""SD3's unpatchify, einsum("nhwpqc->nchpwq") over [1, 16, 16, 2, 2, 4] (five axes after the batch), becomes a
Transpose that the wide-axis passes fit in ncnn's 4 axes; checked in the real ncnn against onnxruntime."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from converter import convert
from converter.ir import ConversionError
from tests.onnx_cases import check_in_ncnn, ncnn_layer_types


def unpatchify(equation="nhwpqc->nchpwq", grid=16, patch=2, channels=4, hidden=8):
    """diffusers' SD3Transformer2DModel tail: proj_out (a Linear), reshape to patches, einsum, reshape."""
    w = np.random.default_rng(0).standard_normal((hidden, patch * patch * channels)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["tokens", "w"], ["proj"]),
             helper.make_node("Reshape", ["proj", "patches"], ["grid"]),
             helper.make_node("Einsum", ["grid"], ["moved"], equation=equation, name="unpatchify"),
             helper.make_node("Reshape", ["moved", "image_shape"], ["image"])]
    inits = [numpy_helper.from_array(w, "w"),
             numpy_helper.from_array(np.array([1, grid, grid, patch, patch, channels], np.int64), "patches"),
             numpy_helper.from_array(np.array([1, channels, grid * patch, grid * patch], np.int64), "image_shape")]
    graph = helper.make_graph(nodes, "sd3_tail",
                              [helper.make_tensor_value_info("tokens", TensorProto.FLOAT, [1, grid * grid, hidden])],
                              [helper.make_tensor_value_info("image", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_sd3_unpatchify_converts_exactly(tmp_path):
    converted = check_in_ncnn(unpatchify(), tmp_path)
    assert converted.stats["einsums_as_transposes"] == 1
    assert "Einsum" not in ncnn_layer_types(converted)


@pytest.mark.parametrize("equation", ["nhwpqc->nhwpqc", "nhwpqc->nchwpq"])
def test_other_permutations(tmp_path, equation):
    check_in_ncnn(unpatchify(equation), tmp_path)


def test_an_einsum_that_sums_is_not_a_transpose():
    """nhwpqc->nchw sums p and q: left to the Einsum lowering, which refuses five axes, naming the node."""
    model = unpatchify("nhwpqc->nchw")
    model.graph.node[-1].input[1] = "small_shape"
    model.graph.initializer.append(numpy_helper.from_array(np.array([1, 4, 16, 16], np.int64), "small_shape"))
    with pytest.raises(ConversionError, match="Einsum node 'unpatchify'.*5 ncnn axes"):
        convert(model)
