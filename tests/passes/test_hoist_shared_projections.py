"""hoist_shared_projections: an unrolled recurrence no ncnn layer computes (torch's RNNCell with
nonlinearity="relu", models/unrolled/rnn_relu.onnx from scripts/export_unrolled_cells.py) keeps its
steps, but their input products by the one W_ih become one Gemm over all steps: W_ih written once,
the numbers still onnxruntime's in real ncnn and the interpreter."""
from pathlib import Path

import onnx

from converter.ncnn_side.bin_size import duplicated_weights, written_bin_bytes
from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, ncnn_layer_types

UNROLLED = Path(__file__).resolve().parents[2] / "models" / "unrolled"
STEPS = 6


def test_input_products_of_unrolled_steps_are_one_gemm(tmp_path):
    model = onnx.load(UNROLLED / "rnn_relu.onnx")
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["recurrent_cells_fused"] == 0          # relu: not ncnn's RNN
    assert converted.stats["projections_hoisted"] == STEPS
    types = ncnn_layer_types(converted)
    assert types.count("Gemm") == 1
    # the recurrent products stay per step (each reads the step before); the first one, on the zero
    # state, folded away
    assert types.count("InnerProduct") == STEPS - 1
    w_ih = next(t for t in model.graph.initializer if list(t.dims) == [5, 256])
    assert not [d for d in duplicated_weights(converted.graph) if d["size"] == onnx.numpy_helper.to_array(w_ih).nbytes]
    # written out per step, the .bin held 6 copies of W_ih: 32 KB for 5.3 KB
    assert written_bin_bytes(converted.graph) <= 1.1 * converted.stats["model_weight_bytes"]
    check_interpreter_matches_ncnn(converted, model, tmp_path)
