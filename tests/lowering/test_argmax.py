"""ArgMax / ArgMin in real ncnn against onnxruntime (ncnn gives float indices, ONNX int64)."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from converter import ConversionError
from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model


def arg_model(op, x_shape, **attrs):
    model = make_model([helper.make_node(op, ["x"], ["y"], **attrs)], [("x", x_shape)], [], opset=13)
    model.graph.output.append(helper.make_value_info(
        "y", helper.make_tensor_type_proto(TensorProto.INT64, None)))
    inferred = onnx.shape_inference.infer_shapes(model).graph.output
    del model.graph.output[:]
    model.graph.output.extend(inferred)
    return model


def with_ties(shape, seed=0):
    """Values on a coarse grid, so most rows hold the extreme value more than once."""
    return np.random.default_rng(seed).integers(-2, 3, shape).astype(np.float32)


SHAPES = [((1, 3, 4, 5), 1), ((1, 3, 4, 5), -1), ((1, 3, 4, 5), 2), ((1, 6, 7), 2), ((1, 6, 7), 1),
          ((1, 9), 1), ((3, 4), 0), ((2, 3, 4, 5), 0), ((7,), 0)]
# every attribute combination on a few shapes, the defaults on all
CASES = [(op, shape, axis, keepdims, last) for op in ("ArgMax", "ArgMin") for shape, axis in SHAPES[:3:2] + SHAPES[6:7]
         for keepdims in (1, 0) for last in (0, 1)] + \
        [(op, shape, axis, 1, 0) for op in ("ArgMax", "ArgMin") for shape, axis in SHAPES if (shape, axis) not in
         SHAPES[:3:2] + SHAPES[6:7]]


@pytest.mark.parametrize("op,x_shape,axis,keepdims,last", CASES, ids=str)
def test_arg_extreme(op, x_shape, axis, keepdims, last, tmp_path):
    model = arg_model(op, x_shape, axis=axis, keepdims=keepdims, select_last_index=last)
    converted = check_in_ncnn(model, tmp_path, {"x": with_ties(x_shape)})
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_argmax_default_axis_of_a_batched_tensor_is_refused(tmp_path):
    with pytest.raises(ConversionError, match=r"ArgMax node .*batch axis"):
        check_in_ncnn(arg_model("ArgMax", (1, 3, 4)), tmp_path)
