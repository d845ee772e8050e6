"""InstanceNormalization, DepthToSpace (both modes) and SpaceToDepth in real ncnn against onnxruntime."""
import numpy as np
import pytest
from onnx import helper

from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model, ncnn_layer_types


@pytest.mark.parametrize("shape", [[1, 4, 5, 6], [1, 3, 10]])
def test_instance_norm(tmp_path, shape):
    rng = np.random.default_rng(3)
    c = shape[1]
    model = make_model([helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=1e-3)],
                       [("x", shape)], [("y", shape)],
                       [("s", rng.uniform(0.5, 2, c).astype(np.float32)), ("b", rng.standard_normal(c).astype(np.float32))])
    converted = check_in_ncnn(model, tmp_path, low=-3, high=5)
    assert "InstanceNorm" in ncnn_layer_types(converted)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
@pytest.mark.parametrize("block", [2, 3])
def test_depth_to_space(tmp_path, mode, block):
    model = make_model([helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=block, mode=mode)],
                       [("x", [1, 2 * block * block, 3, 4])], [("y", None)])
    converted = check_in_ncnn(model, tmp_path)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


@pytest.mark.parametrize("block", [2, 3])
def test_space_to_depth(tmp_path, block):
    model = make_model([helper.make_node("SpaceToDepth", ["x"], ["y"], blocksize=block)],
                       [("x", [1, 3, 2 * block, 3 * block])], [("y", None)])
    converted = check_in_ncnn(model, tmp_path)
    check_interpreter_matches_ncnn(converted, model, tmp_path)
