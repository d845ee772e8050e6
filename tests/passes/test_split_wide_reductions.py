"""Adaptive average pooling to sizes that do not divide the input, as torch.export writes it: every
window gathered by GatherND into [oh, kh, ow, kw, B, C], moved to [B, C, oh, kh, ow, kw], meaned over kh
and kw (reduced one axis at a time so each step fits ncnn's 4 axes); many scattered windows are picked
by a constant one-hot product. In the real ncnn and the interpreter against onnxruntime."""
import numpy as np
import pytest
from onnx import helper

from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model


def windows(size, out):
    """Each output cell's window of an adaptive pool from `size` to `out` cells per side, as (row, col)
    index pairs: [out, k, out, k, 2] (every window has k = the largest window's cells, repeating its last)."""
    starts = [(i * size) // out for i in range(out)]
    ends = [-(-(i + 1) * size // out) for i in range(out)]
    k = max(e - s for s, e in zip(starts, ends))
    rows = [[min(s + j, e - 1) for j in range(k)] for s, e in zip(starts, ends)]
    idx = np.zeros((out, k, out, k, 2), np.int64)
    for a in range(out):
        for i in range(k):
            for b in range(out):
                for j in range(k):
                    idx[a, i, b, j] = (rows[a][i], rows[b][j])
    return idx


def pool_model(size, out, channels=4, op="ReduceMean"):
    idx = windows(size, out)
    nodes = [helper.make_node("Transpose", ["x"], ["hwbc"], perm=[2, 3, 0, 1]),
             helper.make_node("GatherND", ["hwbc", "idx"], ["win"]),
             helper.make_node("Transpose", ["win"], ["bc_win"], perm=[4, 5, 0, 1, 2, 3]),
             helper.make_node(op, ["bc_win", "axes"], ["y"], keepdims=0)]
    inits = [("idx", idx), ("axes", np.array([3, 5], np.int64))]
    return make_model(nodes, [("x", [1, channels, size, size])], [("y", None)], inits, opset=18)


@pytest.mark.parametrize("size, out, op", [(3, 2, "ReduceMean"), (5, 3, "ReduceMax"), (3, 6, "ReduceMean")])
def test_adaptive_pool_windows(tmp_path, size, out, op):
    """3 -> 2 and 5 -> 3: overlapping windows; 3 -> 6: 36 one-cell windows, too scattered for Crops."""
    model = pool_model(size, out, op=op)
    converted = check_in_ncnn(model, tmp_path)
    # a mean of windows is taken earlier by convert_window_gathers (per-axis window matrices); a max is this pass's
    taken = "wide_reductions_split" if op == "ReduceMax" else "window_gathers_converted"
    assert converted.stats[taken] == 1
    check_interpreter_matches_ncnn(converted, model, tmp_path)
