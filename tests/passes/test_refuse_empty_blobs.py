"""A blob with an extent of 0 is refused naming its ONNX node: a constant that folds to no values
(the node test shape_start_greater_than_end: no MemoryData of no values can be written) and a
layer whose output would be empty (real ncnn fails at run time with -100)."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from converter import convert
from converter.ir import ConversionError
from onnx_cases import make_model


@pytest.mark.parametrize("start,end", [(2, 1), (1, 1)])
def test_empty_constant_output_is_refused(start, end):
    node = helper.make_node("Shape", ["x"], ["y"], start=start, end=end)
    model = make_model([node], [("x", [3, 4, 5])], [], opset=15)
    model.graph.output.append(helper.make_tensor_value_info("y", TensorProto.INT64, [0]))
    with pytest.raises(ConversionError, match=r"'y' of shape \[0\], which is empty"):
        convert(model)


def test_resize_to_an_empty_extent_is_refused():
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="linear", name="shrink")
    model = make_model([node], [("x", [1, 1, 3, 1])], [("y", None)],
                       [("scales", np.array([1, 1, 0.3, 2.0], np.float32))], opset=19)
    with pytest.raises(ConversionError, match=r"node 'shrink' gives 'y' of shape \[1, 1, 0, 2\], which is empty"):
        convert(model)


def test_an_empty_intermediate_that_no_layer_keeps_is_fine():
    """Shape(x)[2:1] concatenated to a shape: folded away, no blob left empty."""
    nodes = [helper.make_node("Shape", ["x"], ["empty"], start=2, end=1),
             helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Concat", ["s", "empty"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["y"])]
    convert(make_model(nodes, [("x", [1, 4, 5])], [("y", [1, 4, 5])], opset=15))
