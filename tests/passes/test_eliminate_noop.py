"""eliminate_noop: the Noops lowering writes for ops that change nothing in ncnn are dropped (their
readers read the input; a graph output's name moves to the producer), checked against onnxruntime in
the real ncnn and the interpreter; a Noop writing a graph output from a blob read elsewhere stays."""
from onnx import helper

from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model
from onnx_cases import ncnn_layer_types as layers


def identity_transpose(last=True):
    """x -> Relu -> Transpose(identity perm) [-> Sigmoid] -> y."""
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Transpose", ["r"], ["t"], perm=[0, 1, 2, 3])]
    if last:
        nodes.append(helper.make_node("Sigmoid", ["t"], ["y"]))
    else:
        nodes[-1].output[0] = "y"
    return make_model(nodes, [("x", [1, 3, 4, 5])], [("y", [1, 3, 4, 5])])


def test_a_noop_between_layers_goes(tmp_path):
    model = identity_transpose()
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["noops_removed"] == 1
    assert layers(converted) == ["Input", "ReLU", "Sigmoid"]
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_a_noop_writing_a_graph_output_gives_its_name_to_the_producer(tmp_path):
    model = identity_transpose(last=False)
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["noops_removed"] == 1
    assert layers(converted) == ["Input", "ReLU"]
    assert converted.graph.producer("y").op == "ReLU"
    check_interpreter_matches_ncnn(converted, model, tmp_path)


def test_a_noop_writing_an_output_from_a_blob_read_elsewhere_stays(tmp_path):
    model = identity_transpose(last=False)
    model.graph.node.append(helper.make_node("Sigmoid", ["r"], ["z"]))
    model.graph.output.append(helper.make_tensor_value_info("z", 1, [1, 3, 4, 5]))
    converted = check_in_ncnn(model, tmp_path)
    assert converted.stats["noops_removed"] == 0 and "Noop" in layers(converted)
    check_interpreter_matches_ncnn(converted, model, tmp_path)
