"""fold_transpose_chains: two Transposes in a row become one, or none where they cancel (MaxViT's window
partition straight into a grid), in real ncnn and the interpreter against onnxruntime; a first Transpose
that another node also reads is kept."""
import numpy as np
from onnx import helper

from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model, ncnn_layer_types

WINDOWS, GRID = [0, 5, 1, 3, 2, 4], [0, 2, 4, 3, 5, 1]      # MaxViT's, composing to the identity


def chain(first, second, x_shape=(1, 4, 4, 8), wide=(1, 2, 2, 2, 2, 8), also_read=False, as_output=False):
    inits = [("wide", np.array(wide, np.int64)), ("back", np.array(x_shape, np.int64))]
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Reshape", ["r", "wide"], ["w"]),
             helper.make_node("Transpose", ["w"], ["t1"], perm=first),
             helper.make_node("Transpose", ["t1"], ["t2"], perm=second)]
    outputs = [("y", None)]
    if as_output:
        nodes.append(helper.make_node("Identity", ["t2"], ["y"]))
        outputs = [("y", None), ("t2", None)]
    else:
        nodes.append(helper.make_node("Reshape", ["t2", "back"], ["y"]))
    if also_read:
        nodes += [helper.make_node("ReduceSum", ["t1"], ["s"], keepdims=0)]
        outputs.append(("s", None))
    return make_model(nodes, [("x", x_shape)], outputs, inits)


def test_a_window_partition_undone_by_a_grid_partition_cancels(tmp_path):
    model = chain(WINDOWS, GRID)
    converted = check_in_ncnn(model, tmp_path, rtol=0, atol=0)
    check_interpreter_matches_ncnn(converted, model, tmp_path)
    assert converted.stats["transposes_cancelled"] == 1 and "Permute" not in ncnn_layer_types(converted)


def test_two_permutes_become_one(tmp_path):
    model = chain([0, 2, 1, 3], [0, 3, 1, 2], x_shape=(1, 3, 4, 5), wide=(1, 3, 4, 5))
    converted = check_in_ncnn(model, tmp_path, rtol=0, atol=0)
    check_interpreter_matches_ncnn(converted, model, tmp_path)
    assert converted.stats["transposes_folded"] == 1 and ncnn_layer_types(converted).count("Permute") == 1


def test_a_cancelled_pair_that_is_a_graph_output_keeps_its_name(tmp_path):
    model = chain([0, 2, 1, 3], [0, 2, 1, 3], x_shape=(1, 3, 4, 5), wide=(1, 3, 4, 5), as_output=True)
    converted = check_in_ncnn(model, tmp_path, rtol=0, atol=0)
    assert converted.stats["transposes_cancelled"] == 1


def test_a_first_transpose_read_elsewhere_is_kept(tmp_path):
    model = chain([0, 2, 1, 3], [0, 3, 1, 2], x_shape=(1, 3, 4, 5), wide=(1, 3, 4, 5), also_read=True)
    converted = check_in_ncnn(model, tmp_path, rtol=1e-5, atol=1e-5)
    assert converted.stats["transposes_folded"] == 0 and ncnn_layer_types(converted).count("Permute") == 2
