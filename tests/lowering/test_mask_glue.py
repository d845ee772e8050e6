"""The attention-mask chain torch.jit exports of Hugging Face encoders emit (BERT/ALBERT/RoBERTa
with a mask): Cast to bool, Flatten, Gather at 4-D constant indices (a 5-D intermediate that
passes/flatten_gather_indices.py makes flat), Reshape, And with a constant, Expand of a bool,
Where(mask, 0, finfo.min), Add to the scores, Softmax. Real ncnn and the interpreter against
onnxruntime."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model

T = 6


def jit_mask_model():
    nodes = [helper.make_node("Cast", ["attention_mask"], ["m"], to=TensorProto.BOOL),
             helper.make_node("Flatten", ["m"], ["flat"], axis=2),
             helper.make_node("Gather", ["flat", "positions"], ["picked"], axis=0),
             helper.make_node("Reshape", ["picked", "minus_one"], ["row"]),
             helper.make_node("Reshape", ["row", "mask_shape"], ["m4"]),
             helper.make_node("And", ["all_true", "m4"], ["both"]),
             helper.make_node("Expand", ["both", "scores_shape"], ["wide"]),
             helper.make_node("Where", ["wide", "zero", "lowest"], ["bias"]),
             helper.make_node("Add", ["x", "bias"], ["z"]),
             helper.make_node("Softmax", ["z"], ["y"], axis=-1)]
    return make_model(nodes, [("x", [1, 2, T, T]), ("attention_mask", [1, T], TensorProto.INT64)], [("y", None)],
                      [("positions", np.arange(T, dtype=np.int64).reshape(1, 1, 1, T)),
                       ("minus_one", np.array([-1], np.int64)), ("mask_shape", np.array([1, 1, 1, T], np.int64)),
                       ("all_true", np.ones((1, 1, T, 1), bool)), ("scores_shape", np.array([1, 1, T, T], np.int64)),
                       ("zero", np.array(0, np.float32)), ("lowest", np.array(np.finfo(np.float32).min, np.float32))])


@pytest.mark.parametrize("keep", [[1, 1, 1, 1, 0, 0], [1, 0, 1, 0, 1, 1]])
def test_jit_attention_mask_chain(tmp_path, keep):
    model = jit_mask_model()
    feeds = {"x": np.random.default_rng(0).uniform(-2, 2, (1, 2, T, T)).astype(np.float32),
             "attention_mask": np.array([keep], np.int64)}
    converted = check_in_ncnn(model, tmp_path, feeds=feeds)
    assert converted.stats["gather_indices_flattened"] == 1
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_gather_flattening_keeps_a_copying_reshape_alone():
    """A Reshape that copies an extent (code 0) reads the gathered shape: the indices stay as given."""
    from converter import convert
    model = make_model([helper.make_node("Gather", ["x", "i"], ["g"], axis=1),
                        helper.make_node("Reshape", ["g", "target"], ["y"])],
                       [("x", [1, 5, 3])], [("y", None)],
                       [("i", np.array([[0, 1], [2, 3]], np.int64)), ("target", np.array([0, 4, 3], np.int64))])
    assert convert(model).stats["gather_indices_flattened"] == 0
