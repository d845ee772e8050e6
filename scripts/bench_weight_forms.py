"""Size and speed of the forms that write a weight once, against the forms that copy it, in the real
ncnn runtime (issue 28), with each output's largest difference from onnxruntime.

    python scripts/bench_weight_forms.py recurrent [--batch 4] [--steps 64] [--threads 1] [--repeat 15]
    python scripts/bench_weight_forms.py rxnmap [--threads 1] [--repeat 10]

recurrent: a bidirectional LSTM and GRU (128 -> 128) over a batch of sequences, as one ncnn layer
with reset steps (lowering/recurrent_batch.py's batch_in_time) against one layer per sequence.
rxnmap: chython-rxnmap 2.0 at 24 atoms (scripts/fetch_models.py), convert against
convert --share-weights. Prints .bin bytes, median ms and the ratio; the machine is shared: read ratios.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RXNMAP_SHAPES = {"atoms": [1, 24], "neighbors": [1, 24], "distances": [1, 24, 24], "roles": [1, 24]}


def time_files(model, feeds: dict, want: dict, threads: int, repeat: int) -> tuple[int, float, float]:
    """(.bin bytes, median ms, largest difference from onnxruntime) of a converted model in real ncnn."""
    import ncnn
    from converter.verification.feeds import ncnn_feed
    from scripts.bench import ncnn_dtype
    with tempfile.TemporaryDirectory() as folder:
        param, bin_ = Path(folder) / "m.param", Path(folder) / "m.bin"
        model.save(param, bin_)
        net = ncnn.Net()
        for option in ("use_fp16_storage", "use_fp16_arithmetic", "use_fp16_packed", "use_bf16_storage"):
            setattr(net.opt, option, False)
        net.opt.num_threads = threads
        assert net.load_param(str(param)) == 0 and net.load_model(str(bin_)) == 0
        io = model.io()
        arrays = {e["ncnn"]: ncnn_feed(feeds[e["onnx"]], model.graph.tensors[e["onnx"]], ncnn_dtype(model.graph, e["onnx"]))
                  for e in io["inputs"]}          # alive while their Mats are: ncnn.Mat wraps the memory
        mats = {blob: ncnn.Mat(array).clone() for blob, array in arrays.items()}
        outputs = {e["onnx"]: e["ncnn"] for e in io["outputs"]}

        def run():
            ex = net.create_extractor()
            for blob, mat in mats.items():
                assert ex.input(blob, mat) == 0, blob
            return {o: np.array(ex.extract(blob)[1]) for o, blob in outputs.items()}
        got = run()
        error = max(float(np.abs(got[o].reshape(want[o].shape) - want[o]).max()) for o in outputs)
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            run()
            times.append(time.perf_counter() - start)
        return bin_.stat().st_size, 1000 * statistics.median(times), error


def compare(label: str, forms: dict, feeds: dict, want: dict, args) -> None:
    """forms: name -> a function converting the model that form's way; the first is the baseline."""
    rows = {name: time_files(make(), feeds, want, args.threads, args.repeat) for name, make in forms.items()}
    base = next(iter(rows.values()))
    for name, (size, ms, error) in rows.items():
        print(f"{label:10s} {name:14s} .bin {size:>11d}  {ms:8.2f} ms  x{ms / base[1]:.2f}  "
              f"max |ncnn - onnxruntime| {error:.1e}", flush=True)


def recurrent(args) -> None:
    from onnx import TensorProto, helper, numpy_helper
    import converter.lowering.recurrent as lowering
    from converter import convert
    from scripts.onnx_judge import onnxruntime_outputs
    batch_in_time, size = lowering.batch_in_time, 128

    def one_layer_per_sequence(model):
        lowering.batch_in_time = lambda *a: None        # the fallback, forced
        try:
            return convert(model)
        finally:
            lowering.batch_in_time = batch_in_time
    for op, gates in (("LSTM", 4), ("GRU", 3)):
        rng = np.random.default_rng(0)
        weights = [(name, (0.1 * rng.standard_normal(shape)).astype(np.float32)) for name, shape in
                   (("W", (2, gates * size, size)), ("R", (2, gates * size, size)), ("B", (2, 2 * gates * size)))]
        extra = {"linear_before_reset": 1} if op == "GRU" else {}
        graph = helper.make_graph(
            [helper.make_node(op, ["X", "W", "R", "B"], ["Y"], direction="bidirectional", hidden_size=size, **extra)],
            op, [helper.make_tensor_value_info("X", TensorProto.FLOAT, [args.steps, args.batch, size])],
            [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
            [numpy_helper.from_array(v, name) for name, v in weights])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        feeds = {"X": rng.uniform(-1, 1, (args.steps, args.batch, size)).astype(np.float32)}
        compare(op, {"per sequence": lambda: one_layer_per_sequence(model), "reset steps": lambda: convert(model)},
                feeds, onnxruntime_outputs(model, feeds), args)


def rxnmap(args) -> None:
    from converter import convert
    from converter.onnx_side.loader import prepare_model
    from converter.verification.feeds import make_inputs
    from scripts.fetch_models import fetch
    from scripts.onnx_judge import onnxruntime_outputs
    proto = prepare_model(fetch("rxnmap"), RXNMAP_SHAPES)
    copies = convert(proto)
    feeds = make_inputs(proto, copies.graph, {}, seed=0)
    compare("rxnmap", {"copies": lambda: copies, "--share-weights": lambda: convert(proto, share_weights=True)},
            feeds, onnxruntime_outputs(proto, feeds), args)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case", choices=["recurrent", "rxnmap"])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args(argv)
    (recurrent if args.case == "recurrent" else rxnmap)(args)


if __name__ == "__main__":
    main(sys.argv[1:])
