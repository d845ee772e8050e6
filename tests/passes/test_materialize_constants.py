"""A constant that folds to no values (the node test shape_start_greater_than_end) is refused:
a MemoryData of no values is no ncnn blob."""
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
    with pytest.raises(ConversionError, match=r"constant 'y' of shape \[0\] is empty"):
        convert(model)
