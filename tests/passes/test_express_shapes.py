"""Reshape targets computed from run-time sizes become ncnn Reshape 6= expressions: one file, many sizes."""
import numpy as np
import onnx
import pytest
from onnx import helper

from converter import convert
from converter.ir import ConversionError
from onnx_cases import assert_one_file_many_sizes, make_model, ncnn_layer_types

I64 = lambda v: np.array(v, np.int64)  # noqa: E731


def gather_concat_model():
    """y = x.reshape(1, H, -1): torch's Shape -> Gather -> Unsqueeze -> Concat."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "i"], ["h"], axis=0),
             helper.make_node("Unsqueeze", ["h", "ax"], ["hu"]),
             helper.make_node("Concat", ["one", "hu", "m1"], ["shape"], axis=0),
             helper.make_node("Reshape", ["x", "shape"], ["y"])]
    inits = [("i", I64(2)), ("ax", I64([0])), ("one", I64([1])), ("m1", I64([-1]))]
    return make_model(nodes, [("x", [1, 3, "H", "W"])], [("y", None)], inits)


def paddle_chain_model():
    """paddle2onnx: Shape -> Cast(int32) -> Slice -> Cast(int64) -> Concat with 0 (copy), then Transpose."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Cast", ["s"], ["s32"], to=onnx.TensorProto.INT32),
             helper.make_node("Slice", ["s32", "st", "en", "ax"], ["w32"]),
             helper.make_node("Cast", ["w32"], ["w"], to=onnx.TensorProto.INT64),
             helper.make_node("Concat", ["zero", "three", "w", "m1"], ["shape"], axis=0),
             helper.make_node("Reshape", ["x", "shape"], ["r"]),
             helper.make_node("Transpose", ["r"], ["y"], perm=[0, 2, 1, 3])]
    inits = [("st", I64([3])), ("en", I64([4])), ("ax", I64([0])), ("zero", I64([0])), ("three", I64([3])),
             ("m1", I64([-1]))]
    return make_model(nodes, [("x", [1, 6, "H", "W"])], [("y", None)], inits)


def arithmetic_model():
    """y = x.reshape(1, C, H * W // 2, 2): Mul and Div on run-time extents."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Slice", ["s", "two", "four"], ["hw"]),
             helper.make_node("ReduceProd", ["hw"], ["n"], keepdims=1),
             helper.make_node("Div", ["n", "two1"], ["half"]),
             helper.make_node("Concat", ["one", "c", "half", "two1"], ["shape"], axis=0),
             helper.make_node("Reshape", ["x", "shape"], ["y"])]
    inits = [("two", I64([2])), ("four", I64([4])), ("two1", I64([2])), ("one", I64([1])), ("c", I64([3]))]
    return make_model(nodes, [("x", [1, 3, "H", "W"])], [("y", None)], inits)


def renamed_reference_model():
    """The target reads the shape of an Identity's output (removed when lowered) and of a Conv output
    that a BatchNormalization would otherwise absorb: the expression must follow both."""
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "g", "b", "m", "v"], ["bn"]),
             helper.make_node("Identity", ["bn"], ["same"]),
             helper.make_node("Shape", ["same"], ["s"]),
             helper.make_node("Gather", ["s", "i"], ["h"], axis=0),
             helper.make_node("Shape", ["c"], ["sc"]),
             helper.make_node("Gather", ["sc", "j"], ["w_"], axis=0),
             helper.make_node("Unsqueeze", ["h", "ax"], ["hu"]),
             helper.make_node("Unsqueeze", ["w_", "ax"], ["wu"]),
             helper.make_node("Concat", ["one", "hu", "wu", "m1"], ["shape"], axis=0),
             helper.make_node("Reshape", ["bn", "shape"], ["y"])]
    rng = np.random.default_rng(1)
    inits = [("w", rng.standard_normal((4, 3, 3, 3)).astype(np.float32)),
             *[(n, rng.uniform(0.5, 1.5, 4).astype(np.float32)) for n in ("g", "b", "m", "v")],
             ("i", I64(2)), ("j", I64(3)), ("ax", I64([0])), ("one", I64([1])), ("m1", I64([-1]))]
    return make_model(nodes, [("x", [1, 3, "H", "W"])], [("y", None)], inits)


@pytest.mark.parametrize("build, sizes", [
    (gather_concat_model, [(4, 5), (7, 3)]),
    (paddle_chain_model, [(2, 4), (5, 8)]),
    (arithmetic_model, [(4, 5), (2, 3)]),
    (renamed_reference_model, [(4, 5), (6, 3)]),
])
def test_one_file_runs_at_many_sizes(tmp_path, build, sizes):
    model = build()
    converted = convert(model)
    assert converted.stats["reshapes_expressed"] >= 1
    assert not {"Shape", "Gather", "Concat", "Cast"} & set(ncnn_layer_types(converted))
    assert any(n.op == "Reshape" and 6 in n.params for n in converted.graph.nodes.values())
    assert_one_file_many_sizes(model, tmp_path, sizes)


def modulo_model():
    """y = x.reshape(1, C, H % 3 + ..., -1): Mod has no ncnn expression term here."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Slice", ["s", "two", "three"], ["h"]),
             helper.make_node("Mod", ["h", "three1"], ["r"]),
             helper.make_node("Concat", ["one", "r", "m1"], ["shape"], axis=0),
             helper.make_node("Reshape", ["x", "shape"], ["y"])]
    inits = [("two", I64([2])), ("three", I64([3])), ("three1", I64([3])), ("one", I64([1])), ("m1", I64([-1]))]
    return make_model(nodes, [("x", [1, 3, "H", "W"])], [("y", None)], inits)


def test_unsupported_shape_math_still_asks_for_a_fixed_shape():
    """Mod over run-time extents has no term here: the old refusal names the input."""
    from converter.ir import ConversionError
    with pytest.raises(ConversionError, match="--input-shape x="):
        convert(modulo_model())


def test_an_expression_longer_than_ncnn_reads_is_refused():
    """ncnn's param reader takes string params of at most 255 characters (a longer one fails to load:
    'too long string', checked with the pip runtime): the Reshape is refused naming the node."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Gather", ["s", "i"], ["h0"], axis=0)]
    for k in range(40):                  # max(max(max(H, 1), 2), ...): nothing folds
        nodes.append(helper.make_node("Max", [f"h{k}", f"k{k}"], [f"h{k + 1}"]))
    nodes += [helper.make_node("Unsqueeze", ["h40", "ax"], ["hu"]),
              helper.make_node("Concat", ["one", "hu", "m1"], ["shape"], axis=0),
              helper.make_node("Reshape", ["x", "shape"], ["y"], name="long")]
    inits = [("i", I64(2)), ("ax", I64([0])), ("one", I64([1])), ("m1", I64([-1]))]
    inits += [(f"k{k}", I64(k + 1)) for k in range(40)]
    model = make_model(nodes, [("x", [1, 3, "H", "W"])], [("y", None)], inits)
    with pytest.raises(ConversionError, match="Reshape node .long..*expression of [0-9]+ characters.*at most 255"):
        convert(model)


def test_range_from_a_runtime_start(tmp_path):
    """Range(P, P + T) (transformers 4's cache_position: P a cache's length, T the new tokens') is
    P + Range(0, T), so its length is the term T (what a padding mask's gather index past + len(Range) is
    compared with: tests/generation/test_optimum_decoders.py): one file for every P and T, equal to
    onnxruntime in real ncnn and the interpreter; the rewrite fired (3 expressions: the span, the range
    from 0, P as a value)."""
    from onnx import TensorProto

    def size(name, tensor, axis):
        return [helper.make_node("Shape", [tensor], [f"{name}_shape"]),
                helper.make_node("Gather", [f"{name}_shape", f"axis{axis}"], [name], axis=0)]
    nodes = [*size("p", "past", 2), *size("t", "x", 1),
             helper.make_node("Add", ["p", "t"], ["end"]),
             helper.make_node("Range", ["p", "end", "one"], ["r"]),
             helper.make_node("Cast", ["r"], ["rf"], to=TensorProto.FLOAT),
             helper.make_node("Unsqueeze", ["rf", "zero"], ["ru"]),
             helper.make_node("Add", ["x", "ru"], ["y"])]
    inits = [("axis1", np.array(1, np.int64)), ("axis2", np.array(2, np.int64)), ("one", np.array(1, np.int64)),
             ("zero", np.array([0], np.int64))]
    model = make_model(nodes, [("past", [1, 2, "P", 4]), ("x", [1, "T"])], [("y", None)], inits, opset=13)
    converted = assert_one_file_many_sizes(model, tmp_path, [(3, 1), (7, 5)], dims=("P", "T"), rtol=0, atol=0)
    assert converted.stats["reshapes_expressed"] == 3
