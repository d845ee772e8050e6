"""fuse_attention at run-time sequence lengths: the attention models of test_fuse_attention with T (and
S) left dynamic fuse into one MultiHeadAttention (or its Gemm and SDPA form) and one converted file
matches onnxruntime at other lengths (real ncnn and the interpreter); a mask ncnn's layer would have
to broadcast stays unfused."""
import copy

import numpy as np
import pytest
from onnx import numpy_helper
from test_fuse_attention import FORM_CHOICE, S, T, assert_one_attention_layer, attention

from onnx_cases import assert_one_file_many_sizes
from onnx_cases import ncnn_layer_types as layers

NAMES = {T: "T", S: "S"}


def with_run_time_lengths(model):
    """The model with T and S as named dims of its inputs and outputs, and -1 in its reshape targets."""
    model = copy.deepcopy(model)
    for vi in [*model.graph.input, *model.graph.output]:
        for axis, dim in enumerate(vi.type.tensor_type.shape.dim):
            if axis > 0 and dim.dim_value in NAMES:
                dim.dim_param = NAMES[dim.dim_value]
    for k, init in enumerate(model.graph.initializer):
        value = numpy_helper.to_array(init)
        if value.dtype == np.int64 and value.ndim == 1 and value.size >= 3 and value[0] == 1 and value[1] in NAMES:
            value = value.copy()
            value[1] = -1
            model.graph.initializer[k].CopyFrom(numpy_helper.from_array(value, init.name))
    return model


FIRES = {
    "self-attention": ({}, [(3,), (11,)], ("T",)),
    "full mask (1, 1, T, T)": ({"mask": (1, 1, T, T)}, [(3,), (11,)], ("T",)),
    "per-head mask": ({"mask": (1, 2, T, T)}, [(4,)], ("T",)),
    "fused qkv projection": ({"fused_qkv": True}, [(2,), (9,)], ("T",)),
    "gemm projections, fused qkv, mask": ({"fused_qkv": True, "gemm": True, "mask": (1, 1, T, T)}, [(6,)], ("T",)),
    "cross-attention": ({"cross": True}, [(3, 4), (6, 2)], ("T", "S")),
}


@pytest.mark.parametrize("sdpa", [False, True], ids=["one layer", "Gemm and SDPA"])
@pytest.mark.parametrize("variant, sizes, dims", FIRES.values(), ids=FIRES.keys())
def test_attention_fuses_at_run_time_lengths(variant, sizes, dims, sdpa, tmp_path, monkeypatch):
    monkeypatch.setattr(FORM_CHOICE, "prefers_sdpa", lambda rows, embed: sdpa)
    model = with_run_time_lengths(attention(**variant))
    assert any(d.dim_param == "T" for d in model.graph.input[0].type.tensor_type.shape.dim)
    converted = assert_one_file_many_sizes(model, tmp_path, sizes, dims=dims)
    assert converted.stats["attention_fused"] == 1
    assert converted.stats["attention_as_sdpa"] == int(sdpa)
    types = layers(converted)
    assert_one_attention_layer(types, sdpa)
    assert not {"MatMul", "Softmax"} & set(types), types


def test_a_mask_broadcast_along_its_rows_stays_unfused(tmp_path):
    """ncnn's layer reads one mask row per query; (1, 1, 1, T) would need a run-time expansion."""
    model = with_run_time_lengths(attention(mask=True))
    converted = assert_one_file_many_sizes(model, tmp_path, [(3,), (7,)], dims=("T",))
    assert converted.stats["attention_fused"] == 0
    assert "MultiHeadAttention" not in layers(converted)
