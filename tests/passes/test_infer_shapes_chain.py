"""EnCodec-style padding: each conv pads its input to a multiple of its stride, the amount computed from the
length the previous layer's padding gave (Shape -> Cast -> Div -> Ceil -> Mul -> Sub -> Cast, float steps
onnx's data propagation does not follow). Ten such layers, more than the rounds of whole-graph inference,
are known after the node-by-node walk; in the real ncnn and the interpreter against onnxruntime."""
import numpy as np
from onnx import TensorProto, helper

from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model

RNG = np.random.default_rng(0)


def padded_convs(layers=10, length=2000):
    nodes, inits, x = [], [("two", np.array(2.0, np.float32)), ("axis2", np.array([2], np.int64)),
                           ("zeros5", np.zeros(5, np.int64))], "x"
    for k in range(layers):
        p = f"l{k}_"
        nodes += [helper.make_node("Shape", [x], [p + "shape"]),
                  helper.make_node("Gather", [p + "shape", "axis2"], [p + "len"], axis=0),
                  helper.make_node("Cast", [p + "len"], [p + "lenf"], to=TensorProto.FLOAT),
                  helper.make_node("Div", [p + "lenf", "two"], [p + "half"]),
                  helper.make_node("Ceil", [p + "half"], [p + "up"]),
                  helper.make_node("Mul", [p + "up", "two"], [p + "whole"]),
                  helper.make_node("Sub", [p + "whole", p + "lenf"], [p + "extraf"]),
                  helper.make_node("Cast", [p + "extraf"], [p + "extra"], to=TensorProto.INT64),
                  helper.make_node("Concat", ["zeros5", p + "extra"], [p + "pads"], axis=0),
                  helper.make_node("Pad", [x, p + "pads"], [p + "padded"], mode="constant"),
                  helper.make_node("Conv", [p + "padded", p + "w"], [p + "y"], strides=[2], kernel_shape=[2])]
        inits.append((p + "w", RNG.uniform(-1, 1, (1, 1, 2)).astype(np.float32)))
        x = p + "y"
    nodes.append(helper.make_node("Relu", [x], ["y"]))
    return make_model(nodes, [("x", [1, 1, length])], [("y", None)], inits)


def test_a_chain_of_computed_paddings(tmp_path):
    model = padded_convs()
    converted = check_in_ncnn(model, tmp_path)
    check_interpreter_matches_ncnn(converted, model, tmp_path)
