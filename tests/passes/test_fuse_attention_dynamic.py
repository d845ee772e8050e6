"""fuse_attention at run-time sequence lengths: the attention models of test_fuse_attention with T (and
S) left dynamic fuse into one MultiHeadAttention (or its Gemm and SDPA form) and one converted file
matches onnxruntime at other lengths (real ncnn and the interpreter); a padding mask of one row is
filled to every query at run time, a mask broadcast along its columns stays unfused."""
import copy

import numpy as np
import pytest
from onnx import helper, numpy_helper
from test_fuse_attention import C, D, FORM_CHOICE, S, T, Builder, assert_one_attention_layer, attention, rand

from onnx_cases import assert_one_file_many_sizes, make_model
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
    "sequence-first, sqrt scales on q and k": ({"seq_first": True, "scale_at": "qk", "scale_op": "Mul"}, [(3,), (10,)],
                                               ("T",)),
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
    assert_one_attention_layer(types, sdpa, variant.get("seq_first", 0))     # (T, 1, C) back to (1, T, C)
    assert not {"MatMul", "Softmax"} & set(types), types


ROW_MASKS = {
    "padding mask (1, 1, 1, T)": ({"mask": True}, [(1,), (3,), (7,)], ("T",)),
    "BERT's mask from attention_mask (1, T)": ({"mask": "ids"}, [(3,), (9,)], ("T",)),
    "per-head padding mask (1, H, 1, T)": ({"mask": (1, 2, 1, T)}, [(3,), (6,)], ("T",)),
    "cross-attention, padding mask (1, 1, 1, S)": ({"cross": True, "mask": True}, [(3, 4), (6, 2)], ("T", "S")),
    "padding mask expanded to every head": ({"mask": "heads"}, [(3,), (7,)], ("T",)),
    "a row interleaved over the heads (not copies)": ({"mask": "interleaved"}, [(3,), (7,)], ("T",)),
}


@pytest.mark.parametrize("sdpa", [False, True], ids=["one layer", "Gemm and SDPA"])
@pytest.mark.parametrize("variant, sizes, dims", ROW_MASKS.values(), ids=ROW_MASKS.keys())
def test_a_mask_of_one_row_is_filled_to_every_query(variant, sizes, dims, sdpa, tmp_path, monkeypatch):
    """ncnn's layer reads one mask row per query: the one row plus zeros (T, S) made at run time."""
    monkeypatch.setattr(FORM_CHOICE, "prefers_sdpa", lambda rows, embed: sdpa)
    converted = assert_one_file_many_sizes(with_run_time_lengths(attention(**variant)), tmp_path, sizes, dims=dims)
    assert converted.stats["attention_fused"] == 1
    types = layers(converted)
    assert_one_attention_layer(types, sdpa)
    assert types.count("Interp") == 1 and not {"MatMul", "Softmax"} & set(types), types
    # one row copied to every head is filled once for all heads: (T, S), not (H, T, S) after a Tile
    layer = next(n for n in converted.graph.nodes.values() if n.op in ("MultiHeadAttention", "SDPA"))
    per_head = variant["mask"] in ("interleaved", (1, 2, 1, T))
    assert len(converted.graph.tensors[layer.inputs[-1]].ncnn_shape) == (3 if per_head else 2)
    assert ("Tile" in types) == (variant["mask"] == "interleaved"), types


def test_a_mask_broadcast_along_its_columns_stays_unfused(tmp_path):
    """(1, 1, T, 1): one value per query for every key; left as it is (exact, unfused)."""
    model = with_run_time_lengths(attention(mask=(1, 1, T, 1)))
    converted = assert_one_file_many_sizes(model, tmp_path, [(3,), (7,)], dims=("T",))
    assert converted.stats["attention_fused"] == 0
    assert "MultiHeadAttention" not in layers(converted)


def two_blocks_one_padding_mask():
    """An encoder's self-attention over m (S rows) and a decoder's cross-attention from x (T rows) to m,
    both with m's padding mask (1, 1, 1, S): filled once to (S, S) and once to (T, S)."""
    b = Builder()

    def block(src, rows, out):
        q = b.heads(b.linear(src, C, C), rows)
        k = b.heads(b.linear("m", C, C), S, perm=(0, 2, 3, 1))
        v = b.heads(b.linear("m", C, C), S)
        scores = b.op("Add", b.op("Div", b.op("MatMul", q, k), b.const(np.float32(np.sqrt(D)))), "mask")
        context = b.op("MatMul", b.op("Softmax", scores, axis=-1), v)
        merged = b.op("Reshape", b.op("Transpose", context, perm=[0, 2, 1, 3]), b.const(np.array([1, rows, C])))
        b.nodes.append(helper.make_node("MatMul", [merged, b.const(rand(C, C))], [out]))
    block("m", S, "y_self")
    block("x", T, "y_cross")
    return make_model(b.nodes, [("x", [1, T, C]), ("m", [1, S, C]), ("mask", [1, 1, 1, S])],
                      [("y_self", [1, S, C]), ("y_cross", [1, T, C])], b.inits)


@pytest.mark.parametrize("sdpa", [False, True], ids=["one layer", "Gemm and SDPA"])
def test_one_padding_mask_is_filled_for_each_number_of_queries(tmp_path, monkeypatch, sdpa):
    """The cross-attention's queries outnumber the keys at (9, 4): a mask filled to (S, S) would be read
    past its rows."""
    monkeypatch.setattr(FORM_CHOICE, "prefers_sdpa", lambda rows, embed: sdpa)
    model = with_run_time_lengths(two_blocks_one_padding_mask())
    converted = assert_one_file_many_sizes(model, tmp_path, [(9, 4), (3, 6)], dims=("T", "S"))
    assert converted.stats["attention_fused"] == 2
    assert layers(converted).count("Interp") == 2
