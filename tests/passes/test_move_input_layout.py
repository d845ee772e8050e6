"""passes/move_input_layout.py: with --nchw-input, a channels-last input whose readers begin with a
Transpose(0,3,1,2) (after elementwise steps with constants, maybe) takes channels-first; the numbers
stay onnxruntime's, no Transpose is left, and what cannot move is refused in one line."""
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import converter
from converter.ir import ConversionError
from passes.move_input_layout import move_input_layout


def _model(nodes, outputs=("y",), dtype=TensorProto.FLOAT, shape=(1, 8, 6, 3)) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    weights = [numpy_helper.from_array(rng.normal(size=(4, 3, 1, 1)).astype(np.float32), "w"),
               numpy_helper.from_array(np.array(1 / 255, np.float32), "s"),
               numpy_helper.from_array(rng.normal(size=(8, 6, 3)).astype(np.float32), "per_pixel")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", dtype, list(shape))],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs], weights)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _node(op, inputs, output, **attrs):
    return helper.make_node(op, inputs, [output], **attrs)


TO_CHW = {"perm": [0, 3, 1, 2]}


def _matches_onnxruntime(model, feeds):
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    converted = converter.convert(model, nchw_inputs=["x"])
    got = converted.run(feeds)
    for name, value in zip([o.name for o in model.graph.output], want):
        np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-5, err_msg=name)
    assert not any(n.op in ("Permute", "Transpose") for n in converted.graph.nodes.values())
    return converted


def test_a_tf2onnx_style_cast_and_scale_move_with_the_transpose():
    model = _model([_node("Cast", ["x"], "xf", to=TensorProto.FLOAT), _node("Mul", ["xf", "s"], "xs"),
                    _node("Transpose", ["xs"], "xt", **TO_CHW), _node("Conv", ["xt", "w"], "y")], dtype=TensorProto.UINT8)
    x = np.random.default_rng(1).integers(0, 256, (1, 8, 6, 3)).astype(np.uint8)
    converted = _matches_onnxruntime(model, {"x": x})
    assert converted.io()["inputs"][0]["ncnn_shape"] == [3, 8, 6]


def test_two_transposes_and_a_per_pixel_constant_move_and_the_note_names_the_option():
    """The input read by two Transposes, after an Add of an (H, W, C) constant laid out anew as (C, H, W)."""
    model = _model([_node("Add", ["x", "per_pixel"], "xa"), _node("Transpose", ["xa"], "t1", **TO_CHW),
                    _node("Transpose", ["xa"], "t2", **TO_CHW), _node("Conv", ["t1", "w"], "y"), _node("Relu", ["t2"], "z")],
                   outputs=("y", "z"))
    x = np.random.default_rng(2).normal(size=(1, 8, 6, 3)).astype(np.float32)
    converted = _matches_onnxruntime(model, {"x": x})
    assert move_input_layout(converted.graph) == {"input_layouts_moved": 0}       # run twice: nothing more
    notes = converter.convert(model).graph.notes
    assert [n for n in notes if "--nchw-input x" in n] == [notes[-1]]


@pytest.mark.parametrize("nodes, why", [
    ([_node("Transpose", ["x"], "t", perm=[0, 1, 3, 2]), _node("Relu", ["t"], "y")],
     "no Transpose to channels-first (perm 0,3,1,2) follows it: nothing to move (a Transpose by [0, 1, 3, 2]"),
    ([_node("Cast", ["x"], "xf", to=TensorProto.FLOAT), _node("Transpose", ["xf"], "t", **TO_CHW),
      _node("Conv", ["t", "w"], "y"), _node("ReduceMean", ["xf"], "r", axes=[3])],
     "ReduceMean 'ReduceMean_3' reads 'xf' in the input's layout, besides the Transpose to channels-first"),
])
def test_what_cannot_move_is_refused_saying_why_and_gets_no_note(nodes, why):
    outputs = [o for n in nodes for o in n.output if o in ("y", "r")]
    model = _model(nodes, outputs=outputs)
    with pytest.raises(ConversionError) as refused:
        converter.convert(model, nchw_inputs=["x"])
    assert str(refused.value).startswith("--nchw-input x: ") and why in str(refused.value)
    assert not any("--nchw-input" in n for n in converter.convert(model).graph.notes)


def test_a_batch_of_two_is_refused():
    model = _model([_node("Transpose", ["x"], "t", **TO_CHW), _node("Conv", ["t", "w"], "y")], shape=(2, 8, 6, 3))
    with pytest.raises(ConversionError, match="its batch is 2; ncnn takes one image at a time"):
        converter.convert(model, nchw_inputs=["x"])
