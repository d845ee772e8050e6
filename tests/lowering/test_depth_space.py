"""DepthToSpace (DCR, CRD) -> PixelShuffle and SpaceToDepth -> Reorg, real ncnn against onnxruntime."""
import pytest
from onnx import helper

from onnx_cases import (assert_one_file_many_sizes, check_in_ncnn, check_interpreter_matches_ncnn,
                        make_model, ncnn_layer_types)


def model_of(op, x_shape, **attrs):
    return make_model([helper.make_node(op, ["x"], ["y"], **attrs)], [("x", x_shape)], [("y", None)])


@pytest.mark.parametrize("op,x_shape,attrs,layer_type", [
    ("DepthToSpace", (1, 8, 3, 5), dict(blocksize=2), "PixelShuffle"),
    ("DepthToSpace", (1, 8, 3, 5), dict(blocksize=2, mode="DCR"), "PixelShuffle"),
    ("DepthToSpace", (1, 18, 2, 3), dict(blocksize=3, mode="CRD"), "PixelShuffle"),
    ("DepthToSpace", (1, 16, 4, 2), dict(blocksize=2, mode="CRD"), "PixelShuffle"),
    ("SpaceToDepth", (1, 3, 4, 6), dict(blocksize=2), "Reorg"),
    ("SpaceToDepth", (1, 2, 6, 9), dict(blocksize=3), "Reorg"),
    ("SpaceToDepth", (1, 8, 8, 4), dict(blocksize=4), "Reorg"),
], ids=lambda v: str(v) if not isinstance(v, dict) else ",".join(f"{k}={x}" for k, x in v.items()))
def test_depth_space_in_real_ncnn(tmp_path, op, x_shape, attrs, layer_type):
    model = model_of(op, x_shape, **attrs)
    converted = check_in_ncnn(model, tmp_path)
    assert layer_type in ncnn_layer_types(converted)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


@pytest.mark.parametrize("op,mode", [("DepthToSpace", "DCR"), ("DepthToSpace", "CRD"), ("SpaceToDepth", None)])
def test_depth_space_one_file_many_sizes(tmp_path, op, mode):
    attrs = dict(blocksize=2, **({"mode": mode} if mode else {}))
    assert_one_file_many_sizes(model_of(op, (1, 8, "H", "W"), **attrs), tmp_path, [(2, 4), (6, 2)])
