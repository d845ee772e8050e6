"""A Concat input that lost the batch axis on the way (flattened to 1-D and gathered into 4-D: torch.export's
as_strided of a pooled map) joins the others through a Reshape, in the real ncnn and the interpreter against onnxruntime."""
import numpy as np
from onnx import helper

from onnx_cases import check_in_ncnn, check_interpreter_matches_ncnn, make_model


def test_concat_input_without_the_batch_axis(tmp_path):
    ints = lambda v: np.array(v, np.int64)     # noqa: E731
    nodes = [helper.make_node("ReduceMean", ["x"], ["m"], axes=[2, 3], keepdims=1),
             helper.make_node("Reshape", ["m", "flat"], ["m1"]),
             helper.make_node("Gather", ["m1", "order"], ["g4"], axis=0),
             helper.make_node("Conv", ["g4", "w"], ["c"]),
             helper.make_node("Resize", ["c", "", "", "size"], ["up"], mode="nearest"),
             helper.make_node("Concat", ["x", "up"], ["y"], axis=1)]
    inits = [("flat", ints([-1])), ("order", ints([3, 2, 1, 0]).reshape(1, 4, 1, 1)),
             ("w", np.random.default_rng(0).uniform(-1, 1, (4, 4, 1, 1)).astype(np.float32)),
             ("size", ints([1, 4, 3, 3]))]
    model = make_model(nodes, [("x", [1, 4, 3, 3])], [("y", None)], inits)
    converted = check_in_ncnn(model, tmp_path)
    check_interpreter_matches_ncnn(converted, model, tmp_path)
