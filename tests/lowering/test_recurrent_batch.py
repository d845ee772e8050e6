"""A batch of sequences through one ncnn LSTM / GRU with reset steps between the sequences
(lowering/recurrent_batch.py): the .bin holds the weights once, the numbers are onnxruntime's."""
import numpy as np
import pytest
from onnx import numpy_helper

from converter import convert
from converter.ncnn_side.bin_size import written_bin_bytes
from tests.lowering.test_recurrent import DIRECTIONS, GATES, HIDDEN, SIZE, recurrent_model
from tests.onnx_cases import (check_in_ncnn, check_interpreter_matches_ncnn, ncnn_layer_types, onnxruntime_outputs,
                              random_inputs)


def _zero_states(model):
    """torch's export: initial states written as constant zeros."""
    for init in model.graph.initializer:
        if init.name in ("h0", "c0"):
            init.CopyFrom(numpy_helper.from_array(np.zeros(numpy_helper.to_array(init).shape, np.float32), init.name))
    return model


@pytest.mark.parametrize("op,direction,layout,states,final", [("LSTM", "bidirectional", 0, "constant", False),
                                                              ("GRU", "forward", 1, "none", False),
                                                              ("GRU", "reverse", 0, "none", True),
                                                              ("GRU", "bidirectional", 0, "none", True)])
def test_batch_runs_as_one_layer_with_one_weight_copy(tmp_path, op, direction, layout, states, final):
    """`final`: Y_h is read too (rows of Y: the last step forward, the first in reverse)."""
    model = _zero_states(recurrent_model(op, direction, states, read_states=final, layout=layout, batch=2))
    # onnxruntime refuses layout=1: check that one against the real runtime's batch-1 runs instead
    converted = check_in_ncnn(model, tmp_path, low=-3, high=3) if not layout else None
    if layout:
        converted = convert(model)
        _compare_with_single_sequences(converted, model, tmp_path)
    assert ncnn_layer_types(converted).count(op) == 1
    # against batch 1: only the flag column (dirs x gates x H) and the reset rows (2 x (I + 1)) more
    single = convert(recurrent_model(op, direction, "none", read_states=False, layout=layout))
    dirs, gates = DIRECTIONS[direction], GATES[op]
    extra = 4 * (dirs * gates * HIDDEN + 2 * (SIZE + 1))
    assert written_bin_bytes(converted.graph) == written_bin_bytes(single.graph) + extra
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def _compare_with_single_sequences(converted, model, tmp_path):
    """Batch-first Y against the batch-1 model run per sequence in onnxruntime (layout 0)."""
    x = random_inputs(model, low=-3, high=3)["X"]
    single = recurrent_model("GRU", "forward", "none", read_states=False, layout=0, batch=1)
    expected = np.stack([onnxruntime_outputs(single, {"X": x[k][:, None]})["Y"][:, :, 0] for k in range(len(x))])
    got = converted.run({"X": x})["Y"]
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_a_read_cell_state_keeps_one_layer_per_sequence():
    """Y_c is in no output of the one-sequence form."""
    converted = convert(recurrent_model("LSTM", "forward", "none", batch=2))
    assert ncnn_layer_types(converted).count("LSTM") == 2
