"""Shared helpers for tests: tiny ONNX models, onnxruntime reference, real-ncnn runs of converted files."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from converter import convert
from converter.ncnn_side.layout import to_ncnn  # noqa: F401  (the tests feed real ncnn as users do)
from scripts.onnx_judge import onnxruntime_outputs  # noqa: F401  (the reference, one definition)
from converter.ncnn_side.runtime import run_ncnn

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "models"


def _input_info(name, shape, elem_type=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem_type, shape)


def make_model(nodes, inputs, outputs, initializers=(), opset=13) -> onnx.ModelProto:
    """inputs/outputs: (name, shape) pairs, float32, or (name, shape, TensorProto type) triples;
    initializers: (name, array) pairs.

    An output shape of None is filled in by ONNX shape inference.
    """
    graph = helper.make_graph(
        nodes, "test",
        [_input_info(*entry) for entry in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) if s is not None else
         helper.make_value_info(n, helper.make_tensor_type_proto(TensorProto.FLOAT, None))
         for n, s in outputs],
        [numpy_helper.from_array(np.asarray(v), n) for n, v in initializers])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    if any(s is None for _, s in outputs):
        inferred = onnx.shape_inference.infer_shapes(model).graph.output
        del model.graph.output[:]
        model.graph.output.extend(inferred)
    return model


def fed_inputs(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    """The graph inputs a caller feeds (old exporters also list initializers as inputs)."""
    init = {t.name for t in model.graph.initializer}
    return [vi for vi in model.graph.input if vi.name not in init]


def random_inputs(model: onnx.ModelProto, seed: int = 0, low: float = -2.0, high: float = 2.0,
                  dims: dict | None = None) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    feeds = {}
    for vi in fed_inputs(model):
        shape = [d.dim_value if d.HasField("dim_value") else (dims or {}).get(d.dim_param, 1)
                 for d in vi.type.tensor_type.shape.dim]
        dtype = helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type)
        if dtype.kind == "b":
            feeds[vi.name] = rng.integers(0, 2, shape).astype(bool)
        elif dtype.kind in "iu":          # ids and masks: small non-negative integers
            feeds[vi.name] = rng.integers(0, max(int(high), 1) + 1, shape).astype(dtype)
        else:
            feeds[vi.name] = rng.uniform(low, high, shape).astype(dtype)
    return feeds


def node_case_inputs(case, is_fixed) -> tuple[dict, dict]:
    """An onnx backend node case's first data set: the feeds, and the convert arguments that fix
    the inputs `is_fixed(position, name)` selects (weights ncnn holds) and the shapes of the others."""
    names = [i.name for i in case.model.graph.input]
    feeds = dict(zip(names, case.data_sets[0][0]))
    fixed = {k: v for i, (k, v) in enumerate(feeds.items()) if is_fixed(i, k)}
    shapes = {k: list(v.shape) for k, v in feeds.items() if k not in fixed}
    return feeds, {"input_shapes": shapes, "input_values": fixed}


def run_converted_in_ncnn(model: onnx.ModelProto, feeds: dict, tmp_path: Path, **convert_args):
    """Convert, save, run in the real runtime; returns outputs reshaped to the ONNX shapes."""
    converted = convert(model, **convert_args)
    param, bin_ = tmp_path / "m.ncnn.param", tmp_path / "m.ncnn.bin"
    converted.save(param, bin_)
    io = converted.io()
    ncnn_feeds = {e["ncnn"]: to_ncnn(feeds[e["onnx"]], e) for e in io["inputs"]}
    result = run_ncnn(param, bin_, ncnn_feeds, [e["ncnn"] for e in io["outputs"]])
    return converted, {e["onnx"]: result[e["ncnn"]] for e in io["outputs"]}


def assert_matches_reference(model, feeds, outputs, rtol=1e-3, atol=1e-4):
    expected = onnxruntime_outputs(model, feeds)
    for name, want in expected.items():
        got = outputs[name]
        want = want.astype(np.float64) if want.dtype.kind in "biu" else want    # ncnn gives float numbers
        assert got.size == want.size, f"{name}: ncnn gave shape {got.shape}, onnxruntime {want.shape}"
        np.testing.assert_allclose(got.reshape(want.shape), want, rtol=rtol, atol=atol, err_msg=name)


def check_in_ncnn(model: onnx.ModelProto, tmp_path: Path, feeds: dict | None = None, dims: dict | None = None,
                  low: float = -2.0, high: float = 2.0, rtol: float = 1e-3, atol: float = 1e-4,
                  **convert_args):
    """Convert, run in the real runtime, compare with onnxruntime (values, and each output's
    ncnn shape with the one the converter reports); returns the converted model.
    Without `feeds`, inputs are uniform in [low, high) with symbolic dims sized by `dims`."""
    feeds = random_inputs(model, low=low, high=high, dims=dims) if feeds is None else feeds
    converted, outputs = run_converted_in_ncnn(model, feeds, tmp_path, **convert_args)
    for entry in converted.io()["outputs"]:
        if None not in entry["ncnn_shape"]:
            got = outputs[entry["onnx"]].shape
            assert list(got) == entry["ncnn_shape"], f"{entry['onnx']}: ncnn blob {got}, expected {entry}"
    assert_matches_reference(model, feeds, outputs, rtol=rtol, atol=atol)
    return converted


def assert_one_file_many_sizes(model, tmp_path: Path, sizes, dims=("H", "W"), rtol=1e-3, atol=1e-4):
    """Convert once (no --input-shape) and check the same files at every size, in the real ncnn
    and in the interpreter; returns the conversion."""
    converted = convert(model)
    param, bin_ = tmp_path / "m.param", tmp_path / "m.bin"
    converted.save(param, bin_)
    io = converted.io()
    for size in sizes:
        feeds = random_inputs(model, dims=dict(zip(dims, size)))
        ncnn_feeds = {e["ncnn"]: to_ncnn(feeds[e["onnx"]], e) for e in io["inputs"]}
        names = [e["ncnn"] for e in io["outputs"]]
        for got in (run_ncnn(param, bin_, ncnn_feeds, names), converted.run(ncnn_feeds, layout="ncnn")):
            assert_matches_reference(model, feeds, {e["onnx"]: got[e["ncnn"]] for e in io["outputs"]},
                                     rtol=rtol, atol=atol)
    return converted


def ncnn_layer_types(converted) -> list[str]:
    return [n.op for n in converted.graph.topological()]


def check_interpreter_matches_ncnn(converted, model: onnx.ModelProto, tmp_path: Path) -> None:
    """The saved files in the real ncnn and the interpreter agree on random inputs."""
    param, bin_ = tmp_path / "m.param", tmp_path / "m.bin"
    converted.save(param, bin_)
    io = converted.io()
    feeds = {e["ncnn"]: to_ncnn(v, e) for e, v in zip(io["inputs"], random_inputs(model).values())}
    outs = [e["ncnn"] for e in io["outputs"]]
    real, ours = run_ncnn(param, bin_, feeds, outs), converted.run(feeds, layout="ncnn")
    for name in outs:
        np.testing.assert_allclose(ours[name], real[name], rtol=1e-5, atol=1e-5, err_msg=name)
