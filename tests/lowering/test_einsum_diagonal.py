"""Einsum diagonals and traces (a letter twice in one operand) and more than two operands
(contracted pairwise), in real ncnn and the interpreter against onnxruntime."""
import pytest

from converter import convert
from converter.ir import ConversionError
from test_einsum import einsum_model
from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, ncnn_layer_types


@pytest.mark.parametrize("equation, shapes", [
    ("ii", [[4, 4]]),                                   # trace
    ("ii->i", [[5, 5]]),                                # diagonal
    ("bii->bi", [[1, 3, 3]]),
    ("iji->j", [[3, 4, 3]]),                            # repeated letters apart
    ("ii,ij->j", [[3, 3], [3, 5]]),
    ("ij,jk,kl->il", [[2, 3], [3, 4], [4, 5]]),         # three operands
    ("i,j,i,j->", [[5], [4], [5], [4]]),                # four, everything summed
    ("bij,bjk,bkl->bl", [[1, 2, 3], [1, 3, 4], [1, 4, 2]]),
])
def test_einsum_diagonal_and_chains(tmp_path, equation, shapes):
    model = einsum_model(equation, shapes)
    converted = check_in_ncnn(model, tmp_path)
    assert "Einsum" not in ncnn_layer_types(converted)
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_a_letter_twice_in_the_output_is_refused():
    with pytest.raises(ConversionError, match="repeats a letter in the output") as info:
        convert(einsum_model("i->ii", [[4]]))
    assert "\n" not in str(info.value)
