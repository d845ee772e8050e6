"""convert_window_gathers: the window gather-mask-sum-divide torch's dynamo export writes for adaptive
average pooling (a GatherND to six axes) runs as MatMuls by constant matrices, in real ncnn and the
interpreter against onnxruntime; near misses stay refused or untouched."""
import math

import numpy as np
import pytest
from onnx import helper

from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model


def windows(n, out, shift=None):
    """Adaptive pooling's windows along one axis: padded indices (out, kmax), the padding mask, the sizes."""
    starts = [i * n // out for i in range(out)]
    ends = [math.ceil((i + 1) * n / out) for i in range(out)]
    k = max(e - s for s, e in zip(starts, ends))
    index = np.array([[min(s + j, n - 1) for j in range(k)] for s in starts], np.int64)
    pad = np.array([[j >= e - s for j in range(k)] for s, e in zip(starts, ends)])
    return index, pad, np.array([e - s for s, e in zip(starts, ends)], np.float32)


def pool_model(shape, out, form="reduce", before_sum=None, skew=False, last_row_left=False):
    """adaptive_avg_pool2d(x, out) as the dynamo export writes it; `before_sum` an op on the windows
    before they are summed, `skew` moves every other output column's rows down one (not separable),
    `last_row_left` pools the rows but the last (windows no adaptive pooling has)."""
    (hi, hpad, hcount), (wi, wpad, wcount) = windows(shape[2] - last_row_left, out[0]), windows(shape[3], out[1])
    rows = np.broadcast_to(hi[:, :, None, None], (*hi.shape, *wi.shape)).copy()
    if skew:
        rows[:, :, 1::2, :] = np.minimum(rows[:, :, 1::2, :] + 1, shape[2] - 1)
    cols = np.broadcast_to(wi[None, None], rows.shape)
    inits = [("idx", np.stack([rows, cols], -1)), ("hpad", hpad[:, :, None, None]), ("wpad", wpad),
             ("zero", np.array(0, np.float32)), ("count", np.outer(hcount, wcount).astype(np.float32))]
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[2, 3, 0, 1]),
             helper.make_node("GatherND", ["t", "idx"], ["g"], name="gather"),
             helper.make_node("Transpose", ["g"], ["w"], perm=[4, 5, 0, 1, 2, 3]),
             helper.make_node("Where", ["hpad", "zero", "w"], ["m1"]),
             helper.make_node("Where", ["wpad", "zero", "m1"], ["m2"])]
    summed = "m2"
    if before_sum:
        nodes.append(helper.make_node(before_sum, ["m2"], ["m3"]))
        summed = "m3"
    if form == "reduce":
        inits.append(("axes", np.array([3, 5], np.int64)))
        nodes.append(helper.make_node("ReduceSum", [summed, "axes"], ["s"], keepdims=0))
    else:       # one Gather per window row and column, added up (the export's unrolled form)
        terms = []
        for i in range(hi.shape[1]):
            inits.append((f"i{i}", np.array(i, np.int64)))
            nodes.append(helper.make_node("Gather", [summed, f"i{i}"], [f"r{i}"], axis=3))
            for j in range(wi.shape[1]):
                inits.append((f"j{i}_{j}", np.array(j, np.int64)))
                nodes.append(helper.make_node("Gather", [f"r{i}", f"j{i}_{j}"], [f"p{i}_{j}"], axis=4))
                terms.append(f"p{i}_{j}")
        for n, term in enumerate(terms[1:]):
            nodes.append(helper.make_node("Add", [terms[0] if n == 0 else f"a{n - 1}", term], [f"a{n}"]))
        nodes.append(helper.make_node("Identity", [f"a{len(terms) - 2}"], ["s"]))
    nodes.append(helper.make_node("Div", ["s", "count"], ["y"]))
    return make_model(nodes, [("x", shape)], [("y", None)], inits)


@pytest.mark.parametrize("form", ["reduce", "unrolled"])
@pytest.mark.parametrize("shape,out,last_row_left,layers", [
    ((1, 3, 7, 11), (3, 4), False, {"Pooling": 1}),             # ncnn's adaptive average Pooling
    ((1, 3, 7, 11), (3, 4), True, {"product": 2}),              # other windows: a matrix per axis
    ((2, 3, 9, 8), (4, 1), False, {"product": 2}),              # a batch ncnn keeps: no 3-D Pooling
])
def test_window_sums_run_as_pooling_or_matmuls(form, shape, out, last_row_left, layers, tmp_path):
    model = pool_model(shape, out, form, last_row_left=last_row_left)
    converted = check_in_ncnn(model, tmp_path)
    check_interpreter_matches_ncnn(converted, model, tmp_path)
    assert converted.stats["window_gathers_converted"] == 1
    ops = [n.op for n in converted.graph.topological()]
    # a product by a constant matrix is a MatMul, or a Gemm where flatten_matmul_rows made it one
    counts = {"Pooling": ops.count("Pooling"), "product": ops.count("MatMul") + ops.count("Gemm")}
    assert "Gather" not in " ".join(ops) and counts == {"Pooling": 0, "product": 0, **layers}
    pools = [n for n in converted.graph.topological() if n.op == "Pooling"]
    assert all(p.params[7] == 1 and (p.params[18], p.params[8]) == out for p in pools)


@pytest.mark.parametrize("variant", [{"before_sum": "Relu"}, {"skew": True}], ids=["relu on the windows", "skewed"])
def test_windows_this_pass_cannot_take_are_left_to_the_axis_merges(variant, tmp_path):
    """A Relu on the gathered windows is not linear, and rows that depend on the output column have no
    product of a row matrix and a column matrix: the pass leaves both, and merge_wide_axes fits the
    six-axis windows into ncnn's four (they were refused before it learned GatherND's windows)."""
    model = pool_model((1, 3, 7, 11), (3, 4), **variant)
    converted = check_in_ncnn(model, tmp_path)
    check_interpreter_matches_ncnn(converted, model, tmp_path)
    assert converted.stats["window_gathers_converted"] == 0


def test_a_gather_ncnn_can_hold_is_left_alone(tmp_path):
    """Picking (h, w) pixels into [k, N, C] fits ncnn: not this pass's business."""
    idx = np.array([[0, 1], [2, 3], [1, 1]], np.int64)
    model = make_model([helper.make_node("Transpose", ["x"], ["t"], perm=[2, 3, 0, 1]),
                        helper.make_node("GatherND", ["t", "idx"], ["y"])],
                       [("x", (1, 3, 4, 5))], [("y", None)], [("idx", idx)])
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["window_gathers_converted"] == 0
