"""SpaceToDepth's mode attribute (opset 28) and DepthToSpace's, both orders, several block sizes
and shapes: real ncnn and the interpreter against onnxruntime."""
import pytest
from onnx import helper

from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model

SHAPES = {2: [(1, 4, 2, 6), (1, 3, 8, 4)], 3: [(1, 2, 6, 9)], 4: [(1, 1, 8, 4)]}
CASES = [(op, mode, size, shape) for op in ("SpaceToDepth", "DepthToSpace") for mode in ("DCR", "CRD")
         for size, shapes in SHAPES.items() for shape in shapes]


def _model(op, mode, size, shape):
    if op == "DepthToSpace":          # the same element count, laid out as depth
        shape = (shape[0], shape[1] * size * size, shape[2] // size, shape[3] // size)
    node = helper.make_node(op, ["x"], ["y"], blocksize=size, mode=mode)
    return make_model([node], [("x", shape)], [("y", None)], opset=28)


@pytest.mark.parametrize("op,mode,size,shape", CASES, ids=lambda v: str(v))
def test_mode_in_real_ncnn(tmp_path, op, mode, size, shape):
    model = _model(op, mode, size, shape)
    converted = check_in_ncnn(model, tmp_path)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_space_to_depth_then_back_is_identity_in_ncnn(tmp_path, mode):
    nodes = [helper.make_node("SpaceToDepth", ["x"], ["d"], blocksize=2, mode=mode),
             helper.make_node("DepthToSpace", ["d"], ["y"], blocksize=2, mode=mode)]
    check_in_ncnn(make_model(nodes, [("x", (1, 3, 4, 6))], [("y", None)], opset=28), tmp_path)
