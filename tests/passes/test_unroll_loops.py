"""unroll_loops: a Loop with a constant trip count and a condition kept true becomes copies of its body
(carried values chained, scan outputs stacked), in real ncnn and the interpreter against onnxruntime;
Loops that depend on run-time values stay refused, naming the node."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from converter import convert
from converter.ir import ConversionError
from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model

BOOL, INT, FLOAT = TensorProto.BOOL, TensorProto.INT64, TensorProto.FLOAT


def body(nodes, carried=("v",), scans=(), cond_out="co", counter_shape=(), inits=()):
    """A Loop body: inputs (i, c, carried...), outputs (cond, carried..., scans...)."""
    inputs = [helper.make_tensor_value_info("i", INT, list(counter_shape)),
              helper.make_tensor_value_info("c", BOOL, [])]
    inputs += [helper.make_tensor_value_info(v, FLOAT, None) for v in carried]
    outputs = [helper.make_tensor_value_info(cond_out, BOOL, [])]
    outputs += [helper.make_tensor_value_info(f"{v}o", FLOAT, None) for v in carried]
    outputs += [helper.make_tensor_value_info(s, FLOAT, None) for s in scans]
    return helper.make_graph(nodes, "body", inputs, outputs, [numpy_helper.from_array(v, n) for n, v in inits])


def carried_and_scanned(trips=3, cond="Identity"):
    """v = 2 v + x three times; each step's v times its iteration number is scanned."""
    nodes = [helper.make_node("Mul", ["v", "two"], ["v2"]),
             helper.make_node("Add", ["v2", "x"], ["vo"]),
             helper.make_node("Cast", ["i"], ["fi"], to=FLOAT),
             helper.make_node("Mul", ["vo", "fi"], ["so"])]
    if cond == "Identity":
        nodes.append(helper.make_node("Identity", ["c"], ["co"]))
    else:           # run-time condition: keep going while the sum stays below 100
        nodes += [helper.make_node("ReduceSum", ["vo"], ["total"], keepdims=0),
                  helper.make_node("Less", ["total", "hundred"], ["co"])]
    graph = body(nodes, scans=("so",), inits=[("two", np.array(2, np.float32)),
                                              ("hundred", np.array(100, np.float32))])
    loop = helper.make_node("Loop", ["M", "", "x"], ["vfinal", "scan"], name="loop", body=graph)
    return make_model([loop], [("x", (1, 3, 4))], [("vfinal", None), ("scan", None)],
                      [("M", np.array(trips, np.int64))])


def test_carried_values_and_scan_outputs(tmp_path):
    model = carried_and_scanned()
    converted = check_in_ncnn(model, tmp_path)
    check_interpreter_matches_ncnn(converted, model, tmp_path)
    assert converted.stats["loops_unrolled"] == 1
    assert "Loop" not in [n.op for n in converted.graph.topological()]


def test_tensor_split_as_torch_exports_it(tmp_path):
    """Slices at a constant table read with the iteration number (declared [1], as torch does), appended to
    a sequence the Loop carries, then read with SequenceAt (passes/resolve_sequences.py)."""
    nodes = [helper.make_node("Gather", ["bounds", "i"], ["start"], axis=0),
             helper.make_node("Add", ["i", "one"], ["next"]),
             helper.make_node("Gather", ["bounds", "next"], ["end"], axis=0),
             helper.make_node("Slice", ["x", "start", "end", "axis"], ["piece"]),
             helper.make_node("SequenceInsert", ["v", "piece"], ["vo"]),
             helper.make_node("Identity", ["c"], ["co"])]
    graph = body(nodes, counter_shape=(1,))
    graph.input[2].CopyFrom(helper.make_tensor_sequence_value_info("v", FLOAT, None))
    graph.output[1].CopyFrom(helper.make_tensor_sequence_value_info("vo", FLOAT, None))
    inits = [("M", np.array([2], np.int64)), ("bounds", np.array([0, 2, 5], np.int64)),
             ("one", np.array(1, np.int64)), ("axis", np.array([2], np.int64)), ("k0", np.array(0, np.int64)),
             ("k1", np.array(1, np.int64)), ("yes", np.array(True))]
    nodes = [helper.make_node("SequenceEmpty", [], ["empty"], dtype=FLOAT),
             helper.make_node("Loop", ["M", "yes", "empty"], ["seq"], name="loop", body=graph),
             helper.make_node("SequenceAt", ["seq", "k0"], ["y0"]),
             helper.make_node("SequenceAt", ["seq", "k1"], ["y1"])]
    model = make_model(nodes, [("x", (1, 3, 7))], [("y0", (1, 3, 2)), ("y1", (1, 3, 3))], inits, opset=17)
    converted = check_in_ncnn(model, tmp_path)
    check_interpreter_matches_ncnn(converted, model, tmp_path)
    assert converted.stats["loops_unrolled"] == 1 and converted.stats["sequence_items_read"] == 2
    assert not [n.op for n in converted.graph.topological() if "Sequence" in n.op or n.op == "Loop"]


def test_a_trip_count_folded_from_a_shape_unrolls(tmp_path):
    model = carried_and_scanned()
    shape = [helper.make_node("Shape", ["x"], ["sx"]), helper.make_node("Gather", ["sx", "k"], ["M"], axis=0)]
    model.graph.node.insert(0, shape[1])
    model.graph.node.insert(0, shape[0])
    del model.graph.initializer[:]
    model.graph.initializer.append(numpy_helper.from_array(np.array(1, np.int64), "k"))
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["loops_unrolled"] == 1


def test_a_run_time_condition_stays_refused():
    with pytest.raises(ConversionError, match="Loop node 'loop' \\(loops are not supported\\)") as info:
        convert(carried_and_scanned(cond="Less"))
    assert "\n" not in str(info.value)


def test_a_run_time_trip_count_stays_refused():
    model = carried_and_scanned()
    del model.graph.initializer[:]
    model.graph.input.append(helper.make_tensor_value_info("M", INT, []))
    with pytest.raises(ConversionError, match="Loop node 'loop'"):
        convert(model, input_shapes={"M": []})
