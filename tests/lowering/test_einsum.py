"""Einsum lowered to Reduction / Permute / Reshape / MatMul, in real ncnn and the interpreter
against onnxruntime."""
import numpy as np
import pytest
from onnx import helper

from converter import convert
from converter.ir import ConversionError
from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model, ncnn_layer_types


def einsum_model(equation, shapes, constant_second=False):
    names = [f"x{i}" for i in range(len(shapes))]
    inputs = [(n, s) for n, s in zip(names, shapes)]
    inits = []
    if constant_second:
        inits = [(names[1], np.random.default_rng(3).standard_normal(shapes[1]).astype(np.float32))]
        inputs = inputs[:1]
    return make_model([helper.make_node("Einsum", names, ["y"], equation=equation)], inputs, [("y", None)],
                      inits, opset=13)


@pytest.mark.parametrize("equation, shapes, constant_second", [
    ("bhqd,bhkd->bhqk", [[1, 2, 5, 4], [1, 2, 6, 4]], False),      # attention scores
    ("bhqk,bhkd->bhqd", [[1, 2, 5, 6], [1, 2, 6, 4]], False),      # attention context
    ("bij,bjk->bik", [[3, 2, 4], [3, 4, 5]], False),
    ("bsd,hd->bsh", [[1, 5, 8], [6, 8]], True),                    # a projection
    ("...d,de->...e", [[1, 3, 5, 8], [8, 6]], True),
    ("bqhd,bkhd->bhqk", [[1, 5, 2, 4], [1, 6, 2, 4]], False),      # heads not yet transposed
    ("ij,jk", [[4, 6], [6, 3]], False), ("i,i", [[5], [5]], False), ("i,j->ij", [[4], [3]], False),
    ("ij->ji", [[3, 4]], False), ("bij->bj", [[1, 3, 4]], False), ("ijk->", [[2, 3, 4]], False),
    ("bij,bkl->bik", [[2, 3, 4], [2, 5, 6]], False),                # summed-out letters on both sides
    ("byhwc,hkc->byhwk", [[1, 2, 3, 4, 8], [3, 5, 8]], True),      # MViTv2's relative positions: 5-D, b of 1
    ("bind,snd->bnis", [[1, 5, 2, 4], [2, 2, 4]], True),           # Funnel's token-type bias: b moves
])
def test_einsum(tmp_path, equation, shapes, constant_second):
    model = einsum_model(equation, shapes, constant_second)
    converted = check_in_ncnn(model, tmp_path)
    assert "Einsum" not in ncnn_layer_types(converted)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


# diagonals, traces and chains of operands: test_einsum_diagonal.py
