"""Reshape, Squeeze, Unsqueeze, Transpose, Split, Slice, Expand, Constant: REAL ncnn runtime vs onnxruntime."""
import itertools

import numpy as np
import pytest
from onnx import helper

from converter import ConversionError
from converter.api import NcnnModel
from converter.ncnn_side.runtime import run_ncnn
from converter.onnx_side.loader import load_onnx
from onnx_cases import assert_one_file_many_sizes, check_in_ncnn, make_model, onnxruntime_outputs, random_inputs
from passes import run_pipeline
from passes.fold_constants import fold_constants

I64 = np.int64
BIG = np.iinfo(np.int64).max


def one_node(op, x_shape, consts=(), attrs=None, outputs=1, opset=13, extra_inputs=()):
    """A model running `op` on input x (plus named int64 constant inputs)."""
    names = ["x", *[n for n, _ in consts]]
    outs = ["y"] if outputs == 1 else [f"y{i}" for i in range(outputs)]
    node = helper.make_node(op, names, outs, **(attrs or {}))
    inits = [(n, np.asarray(v, I64)) for n, v in consts]
    return make_model([node], [("x", x_shape), *extra_inputs], [(o, None) for o in outs], inits, opset)


def ops(converted):
    return [n.op for n in converted.graph.topological() if n.op not in ("Input", "MemoryData")]


# ---- Reshape ---------------------------------------------------------------
@pytest.mark.parametrize("x_shape,shape", [
    ([1, 2, 3, 4], [1, 6, 4]), ([1, 2, 3, 4], [1, 24]), ([1, 2, 3, 4], [2, 12]), ([1, 2, 3, 4], [0, -1]),
    ([1, 2, 3, 4], [1, 4, 3, 2]), ([1, 2, 3, 4], [-1]), ([1, 2, 3, 4], [1, 2, 3, 2, 2]),
    ([1, 12], [1, 3, 4]), ([1, 12], [3, 4]), ([2, 3, 4], [4, 0, 2]), ([6], [2, 3]),
])
def test_reshape(x_shape, shape, tmp_path):
    check_in_ncnn(one_node("Reshape", x_shape, [("s", shape)]), tmp_path)


@pytest.mark.parametrize("shape,ncnn_params", [
    ([0, 0, 2, 4], {2: -1, 1: 2, 0: 4}),       # T moves from h to c: inferred
    ([0, -1], None),                          # one axis: a Flatten (passes/convert_flat_reshape.py)
    ([1, -1, 4], {1: -1, 0: 4}),
    ([0, 0, 8, 1], {2: -1, 1: 8, 0: 1}),
    ([0, 0, 2, 2, 2], {2: -1, 11: 2, 1: 2, 0: 2}),
])
def test_reshape_dynamic_extent_uses_copy_and_infer_codes(shape, ncnn_params, tmp_path):
    model = one_node("Reshape", [1, "T", 8], [("s", shape)])
    converted = check_in_ncnn(model, tmp_path, dims={"T": 5})
    if ncnn_params is None:
        assert [n.op for n in converted.graph.nodes.values()].count("Flatten") == 1
        return
    reshape = next(n for n in converted.graph.nodes.values() if n.op == "Reshape")
    assert reshape.params == ncnn_params


@pytest.mark.parametrize("shape", [[-1], [-1, 4]])
def test_reshape_flattening_a_dynamic_extent_is_no_batch(shape, tmp_path):
    """[1, T, 8] -> [-1]: the leading -1 takes T * 8 at run time, so it is no batch axis of 1
    (it once was, and the output was reported as the ncnn blob [1])."""
    model = one_node("Reshape", [1, "T", 8], [("s", shape)])
    for t in (1, 3):
        converted = check_in_ncnn(model, tmp_path, dims={"T": t})
        assert converted.io()["outputs"][0]["batch_axis"] is None


def test_reshape_dynamic_copy_codes_for_same_named_axes(tmp_path):
    # (1, A, 2, 3, B) -> (1, A, 3, 2, B): A stays c and B stays w, so both are copied (0)
    model = one_node("Reshape", [1, "A", 2, 3, "B"], [("s", [0, 0, 3, 2, 0])])
    converted = check_in_ncnn(model, tmp_path, dims={"A": 2, "B": 3})
    assert next(n for n in converted.graph.nodes.values() if n.op == "Reshape").params == {2: 0, 11: 3, 1: 2, 0: 0}


def test_reshape_shape_from_dynamic_input_is_expressed(tmp_path):
    """Reshape(x, Shape(x)) on a dynamic T: an ncnn expression reads T at run time (it used to ask
    for --input-shape); with a static shape it still folds."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Reshape", ["x", "s"], ["y"])]
    model = make_model(nodes, [("x", [1, "T", 8])], [("y", [1, "T", 8])])
    for t in (3, 5):
        check_in_ncnn(model, tmp_path, dims={"T": t})
    check_in_ncnn(model, tmp_path, dims={"T": 3}, input_shapes={"x": [1, 3, 8]})


def test_reshape_allowzero_with_zero_is_refused(tmp_path):
    with pytest.raises(ConversionError, match="allowzero=1"):
        check_in_ncnn(one_node("Reshape", [1, 0, 4], [("s", [0, 4])], {"allowzero": 1}, opset=14), tmp_path)


@pytest.mark.parametrize("x_shape,shape", [([1, 2, 6, 6], [1, 8, 12]), ([1, 6, 4], [0, 5, 5])])
def test_reshape_to_another_element_count_is_refused(x_shape, shape, tmp_path):
    # onnxruntime loads such a model and fails when it runs; ncnn would reshape whatever memory is there
    with pytest.raises(ConversionError, match=r"Reshape node .*has \d+ elements; shape"):
        check_in_ncnn(one_node("Reshape", x_shape, [("s", shape)]), tmp_path)


def test_reshape_moving_two_unknown_extents_names_them_in_an_expression(tmp_path):
    """ncnn (A, B, 1): A moves h->c, B w->h, which copy codes cannot say; 6= reads them off the input."""
    model = one_node("Reshape", [1, "A", "B"], [("s", [0, 0, 0, 1])])
    converted = assert_one_file_many_sizes(model, tmp_path, [(3, 5), (4, 2)], dims=("A", "B"))
    assert [n.params.get(6) for n in converted.graph.nodes.values() if n.op == "Reshape"] == ["1,0w,0h"]


# ---- Squeeze / Unsqueeze ---------------------------------------------------
@pytest.mark.parametrize("x_shape,axes", [
    ([1, 3, 1, 4], [2]), ([1, 3, 1, 4], [0]), ([1, 3, 1, 4], None), ([1, 3, 1, 4], [-2]),
    ([1, 3, 1, 4], [0, 2]), ([3, 1, 4, 1], [1, 3]),
])
def test_squeeze(x_shape, axes, tmp_path):
    consts = [] if axes is None else [("axes", axes)]
    check_in_ncnn(one_node("Squeeze", x_shape, consts), tmp_path)


def test_squeeze_opset11_axes_attribute(tmp_path):
    check_in_ncnn(one_node("Squeeze", [1, 3, 1, 4], attrs={"axes": [2]}, opset=11), tmp_path)


@pytest.mark.parametrize("x_shape,axes", [
    ([1, 3, 4], [1]), ([1, 3, 4], [3]), ([1, 3, 4], [0]), ([1, 3, 4], [-1]), ([4], [0]),
    ([1, 3], [1, 3]), ([2, 3], [0]),
])
def test_unsqueeze(x_shape, axes, tmp_path):
    check_in_ncnn(one_node("Unsqueeze", x_shape, [("axes", axes)]), tmp_path)


def test_squeeze_unsqueeze_dynamic(tmp_path):
    check_in_ncnn(one_node("Unsqueeze", [1, "T", 8], [("axes", [2])]), tmp_path, dims={"T": 3})
    check_in_ncnn(one_node("Squeeze", [1, "T", 1, 8], [("axes", [2])]), tmp_path, dims={"T": 3})


def test_squeeze_without_axes_on_dynamic_extents_is_refused(tmp_path):
    with pytest.raises(ConversionError, match="Squeeze without axes"):
        node = helper.make_node("Squeeze", ["x"], ["y"])
        check_in_ncnn(make_model([node], [("x", [1, "T", 1, 8])], [("y", ["T", 8])]), tmp_path)


# ---- Transpose -------------------------------------------------------------
@pytest.mark.parametrize("perm", list(itertools.permutations(range(4))), ids=str)
def test_transpose_4d_with_batch(perm, tmp_path):
    # the batch axis moves with the permutation; ncnn permutes the 3 other axes
    check_in_ncnn(one_node("Transpose", [1, 2, 3, 4], attrs={"perm": list(perm)}), tmp_path)


@pytest.mark.parametrize("perm", [(0, *p) for p in itertools.permutations(range(1, 5))], ids=str)
def test_transpose_5d_is_4d_in_ncnn(perm, tmp_path):
    check_in_ncnn(one_node("Transpose", [1, 2, 3, 4, 5], attrs={"perm": list(perm)}), tmp_path)


@pytest.mark.parametrize("x_shape,perm", [
    ([2, 3, 4], [2, 0, 1]), ([2, 3, 4], [1, 2, 0]), ([3, 4], [1, 0]), ([3, 4], None), ([2, 3, 4, 5], [3, 1, 0, 2]),
])
def test_transpose_without_batch(x_shape, perm, tmp_path):
    check_in_ncnn(one_node("Transpose", x_shape, attrs={} if perm is None else {"perm": perm}), tmp_path)


def test_transpose_identity_in_ncnn_coordinates_is_noop(tmp_path):
    converted = check_in_ncnn(one_node("Transpose", [1, 3, 4], attrs={"perm": [1, 0, 2]}), tmp_path)
    assert ops(converted) == ["Noop"]


def test_transpose_dynamic(tmp_path):
    converted = check_in_ncnn(one_node("Transpose", [1, "T", 8], attrs={"perm": [0, 2, 1]}), tmp_path, dims={"T": 5})
    assert ops(converted) == ["Permute"]


# ---- Split -----------------------------------------------------------------
@pytest.mark.parametrize("x_shape,axis,split,n", [
    ([1, 6, 4], 1, None, 3), ([1, 6, 4], 1, [1, 2, 3], 3), ([1, 6, 4], -1, [1, 3], 2),
    ([1, 2, 3, 4], 2, [2, 1], 2), ([1, 2, 3, 4, 4], 4, None, 2), ([6], 0, [4, 2], 2), ([4, 6], 0, None, 2),
])
def test_split(x_shape, axis, split, n, tmp_path):
    consts = [] if split is None else [("split", split)]
    check_in_ncnn(one_node("Split", x_shape, consts, {"axis": axis}, outputs=n), tmp_path)


def test_split_num_outputs_uneven_opset18(tmp_path):
    check_in_ncnn(one_node("Split", [1, 7, 2], attrs={"axis": 1, "num_outputs": 3}, outputs=3, opset=18), tmp_path)


def test_split_dynamic_extent_equal_parts(tmp_path):
    converted = check_in_ncnn(one_node("Split", [1, "T", 4], attrs={"axis": 1}, outputs=3), tmp_path, dims={"T": 6})
    assert next(n for n in converted.graph.nodes.values() if n.op == "Slice").params[0] == [-233] * 3


def test_split_errors(tmp_path):
    check_in_ncnn(one_node("Split", [1, 6], attrs={"axis": 0}, outputs=1), tmp_path)  # one part: a copy
    with pytest.raises(ConversionError, match="num_outputs=2 along an axis of unknown extent"):
        check_in_ncnn(one_node("Split", [1, "T"], attrs={"axis": 1, "num_outputs": 2}, outputs=2, opset=18), tmp_path)


# ---- Slice -----------------------------------------------------------------
@pytest.mark.parametrize("x_shape,starts,ends,axes", [
    ([1, 5, 6, 7], [1], [4], [1]), ([1, 5, 6, 7], [-3], [BIG], [2]), ([1, 5, 6, 7], [0, -4], [-1, 100], [2, 3]),
    ([1, 5, 6, 7], [0, 1], [1, 3], [0, 1]), ([1, 5, 6, 7], [1, 2, 3], [3, 4, 5], [3, 2, 1]),
    ([1, 5, 6, 7], [-100], [2], [-1]), ([1, 5, 6, 7, 3], [1, 1], [3, 2], [1, 4]), ([10], [2], [-2], [0]),
    ([4, 5], [1, 1], [3, 4], None), ([1, 5, 6], [0], [5], [1]),
])
def test_slice(x_shape, starts, ends, axes, tmp_path):
    consts = [("starts", starts), ("ends", ends)] + ([] if axes is None else [("axes", axes)])
    check_in_ncnn(one_node("Slice", x_shape, consts), tmp_path)


@pytest.mark.parametrize("starts,ends,axes", [
    ([1], [BIG], [1]), ([-1], [BIG], [1]), ([2], [5], [2]), ([0, 1], [-1, -1], [1, 2]), ([1], [-1], [1]),
    ([-3], [-1], [2]),
])
def test_slice_dynamic_extent(starts, ends, axes, tmp_path):
    model = one_node("Slice", [1, "T", 8], [("starts", starts), ("ends", ends), ("axes", axes)])
    check_in_ncnn(model, tmp_path, dims={"T": 5})


def test_slice_negative_start_on_dynamic_extent_takes_the_last_rows(tmp_path):
    """x[:, -2:] on a run-time axis (a sliding-window cache) is a Crop from max(T - 2, 0): one file
    right both where ONNX clamps the start (T = 1) and where it does not."""
    model = one_node("Slice", [1, "T", 8], [("starts", [-2]), ("ends", [BIG]), ("axes", [1])])
    converted = assert_one_file_many_sizes(model, tmp_path, [(1,), (2,), (5,)], dims=("T",))
    assert ops(converted) == ["Crop"]


def test_slice_whole_or_batch_only_is_noop(tmp_path):
    model = one_node("Slice", [1, 5, 6], [("starts", [0, 0]), ("ends", [1, BIG]), ("axes", [0, 2])])
    assert ops(check_in_ncnn(model, tmp_path)) == ["Noop"]


@pytest.mark.parametrize("consts,message", [
    ([("starts", [3]), ("ends", [2]), ("axes", [1])], "is empty"),
    ([("starts", [0]), ("ends", [0]), ("axes", [0])], "is empty"),
])
def test_slice_errors(consts, message, tmp_path):
    with pytest.raises(ConversionError, match=message):
        check_in_ncnn(one_node("Slice", [1, 5, 6], consts), tmp_path)


# ---- Expand / Constant -----------------------------------------------------
@pytest.mark.parametrize("x_shape,shape", [
    ([1, 3, 1], [1, 3, 4]), ([3, 1], [2, 3, 4]), ([1, 1, 4], [1, 3, 4]), ([1, 3, 4], [1, 3, 4]), ([4], [2, 4]),
])
def test_expand(x_shape, shape, tmp_path):
    check_in_ncnn(one_node("Expand", x_shape, [("shape", shape)]), tmp_path)


def test_constant_surviving_folding_becomes_memorydata(tmp_path):
    value = np.arange(12, dtype=np.float32).reshape(3, 4)
    model = make_model([helper.make_node("Constant", [], ["c"], value=helper.make_tensor(
                            "v", 1, value.shape, value.ravel())),
                        helper.make_node("Add", ["x", "c"], ["y"])], [("x", [1, 3, 4])], [("y", None)])
    graph = load_onnx(model)
    run_pipeline(graph, skip={fold_constants})
    converted = NcnnModel(graph)
    converted.save(tmp_path / "m.param", tmp_path / "m.bin")
    feeds = random_inputs(model)
    names = converted.names.blob
    got = run_ncnn(tmp_path / "m.param", tmp_path / "m.bin", {names["x"]: feeds["x"][0]}, [names["y"]])
    np.testing.assert_allclose(got[names["y"]], onnxruntime_outputs(model, feeds)["y"][0], rtol=1e-6)
