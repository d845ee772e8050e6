"""An LSTM with peepholes over a static length runs unrolled in ONNX ops (madmom's beat BLSTMs): the real
ncnn against onnxruntime, forward, reverse and bidirectional, with and without initial states."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from converter import convert
from converter.ir import ConversionError
from tests.onnx_cases import check_in_ncnn, ncnn_layer_types

T, B, I, H = 5, 1, 6, 4


def peephole_lstm(direction="forward", states=True, steps=T):
    dirs = 2 if direction == "bidirectional" else 1
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((dirs, 4 * H, I)).astype(np.float32) * 0.5, "W"),
             numpy_helper.from_array(rng.standard_normal((dirs, 4 * H, H)).astype(np.float32) * 0.5, "R"),
             numpy_helper.from_array(rng.standard_normal((dirs, 8 * H)).astype(np.float32) * 0.3, "Bias"),
             numpy_helper.from_array(rng.standard_normal((dirs, 3 * H)).astype(np.float32), "P")]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [steps, B, I])]
    if states:
        inputs += [helper.make_tensor_value_info(n, TensorProto.FLOAT, [dirs, B, H]) for n in ("h0", "c0")]
    node = helper.make_node("LSTM", ["x", "W", "R", "Bias", "", "h0" if states else "", "c0" if states else "", "P"],
                            ["y", "y_h", "y_c"], hidden_size=H, direction=direction, name="lstm")
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
                                                    for n in ("y", "y_h", "y_c")], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("states", [True, False])
def test_unrolled_peephole_lstm_matches_onnxruntime(tmp_path, direction, states):
    converted = check_in_ncnn(peephole_lstm(direction, states), tmp_path, low=-1.0, high=1.0)
    assert converted.stats["peephole_lstms_unrolled"] == 1
    assert "LSTM" not in ncnn_layer_types(converted)


def test_unknown_length_is_still_refused():
    model = peephole_lstm(steps="T")
    with pytest.raises(ConversionError, match="peephole"):
        convert(model, input_shapes={"x": [None, B, I], "h0": [1, B, H], "c0": [1, B, H]})
