"""Files pnnx (ncnn's own converter) wrote: `run` matches the real runtime (see tests/data/pnnx/README.md).

They carry what our own writer never emits: repeated `splitncnn_0` names, Reshape expressions
with batch axes (`12=0 13=0 6="1,1,//(8,0n),0n"`), MultiHeadAttention, Gemm with constant B/C.
"""
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from converter import load_ncnn
from converter.ncnn_side import runtime as ncnn_runtime
from converter.interpreter import InterpreterError

DATA = Path(__file__).parent.parent / "data" / "pnnx"
MODELS = Path(__file__).parent.parent.parent / "models"

FILES = {   # name -> ncnn input shapes (numpy order, batch dropped)
    "transformer_small": [(16, 32)],
    "cnn_small": [(3, 32, 32)],
    "cnn_dynamic": [(3, 16, 16)],
    "ppocr_mobile_cls": [(3, 48, 192)],
    "audio_1d": [(4, 64)],
}


def paths(name: str) -> tuple[Path, Path]:
    return DATA / f"{name}.ncnn.param", DATA / f"{name}.ncnn.bin"


def feeds_for(shapes, seed=0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {f"in{i}": rng.uniform(-1, 1, s).astype(np.float32) for i, s in enumerate(shapes)}


@pytest.mark.parametrize("name", sorted(FILES))
def test_run_matches_the_real_runtime(name):
    param, bin_ = paths(name)
    model = load_ncnn(param, bin_)
    feeds = feeds_for(FILES[name])
    ours = model.run(feeds)
    real = ncnn_runtime.run_ncnn(param, bin_, feeds, model.graph.outputs)
    for blob in model.graph.outputs:
        assert ours[blob].shape == real[blob].shape
        scale = max(1.0, float(np.abs(real[blob]).max()))
        np.testing.assert_allclose(ours[blob], real[blob], rtol=1e-4, atol=1e-5 * scale, err_msg=blob)


def test_pnnx_1d_layers_compute_the_onnx_model():
    """pnnx writes Conv1d/MaxPool1d/ConvTranspose1d/AvgPool1d as ncnn's 1-D layers (and Softplus
    as the Softplus layer): the interpreter's run equals onnxruntime on the source model."""
    model = load_ncnn(*paths("audio_1d"))
    assert {"Convolution1D", "ConvolutionDepthWise1D", "Pooling1D", "Deconvolution1D", "Softplus"} <= {
        node.op for node in model.graph.topological()}
    feeds = feeds_for(FILES["audio_1d"])
    reference = ort.InferenceSession(str(MODELS / "audio_1d.onnx")).run(None, {"wave": feeds["in0"][None]})[0]
    np.testing.assert_allclose(model.run(feeds)["out0"], reference[0], rtol=1e-4, atol=1e-5)


def test_the_cli_runs_a_pnnx_file(tmp_path):
    from converter.cli import main
    param, bin_ = paths("ppocr_mobile_cls")
    np.save(tmp_path / "x.npy", feeds_for(FILES["ppocr_mobile_cls"])["in0"])
    assert main(["run", str(param), str(bin_), "--input", f"in0={tmp_path / 'x.npy'}",
                 "-o", str(tmp_path / "out.npz")]) == 0
    assert np.load(tmp_path / "out.npz")["out0"].shape == (2,)


def test_pnnx_bcast_demo_computes_garbage_and_the_interpreter_says_so():
    """pnnx aligns rank-mismatched operands the way ncnn does not: the real runtime returns
    other shapes than ONNX, and the interpreter refuses at the first such BinaryOp."""
    param, bin_ = paths("bcast_demo")
    feeds = feeds_for([(4, 6, 4), (8, 8)])
    reference = ort.InferenceSession(str(MODELS / "bcast_demo.onnx")).run(
        None, {"x": feeds["in0"][None], "seq": feeds["in1"][None]})
    real = ncnn_runtime.run_ncnn(param, bin_, feeds, ["out0", "out1"])
    assert real["out0"].shape != reference[0][0].shape
    assert real["out1"].shape != reference[1][0].shape
    with pytest.raises(InterpreterError, match="BinaryOp layer 'mul_1'.*do not broadcast"):
        load_ncnn(param, bin_).run(feeds)
