"""Where fast int8's time goes: each Convolution / ConvolutionDepthWise / InnerProduct shape of a model timed
alone in the real ncnn, fp32 against int8, 1 thread.

    python -m scripts.int8_layer_profile [--models NAME ...] [--rounds N] [--repeat R]

The QDQ model (scripts/quantize_models.py) is converted in fast mode with every planned layer int8 (fast
mode's float exceptions off), at the deployed input size of scripts/bench_int8.py. Each distinct layer shape
becomes a one-layer net (Input -> layer, random input of the layer's blob shape; the model's weights and
scales) in these forms:

    pack     Input -> ReLU: feeding the blob and packing it for the layer (every form below pays it; it is
             subtracted from them)
    fp32     the float layer (the dequantized int8 weights)
    i8       int8 layer, float in (it quantizes with its input scale), float out (dequantized): fast mode today
    i8>q     int8 layer, float in, int8 out (8=101, requantized with an output scale)
    q        a Quantize layer alone on the layer's input (what an int8 layer pays to read a float blob)
    q>i8     Quantize -> int8 layer with float out, minus q: the layer reading an int8 blob
    q>i8>q   Quantize -> int8 layer with int8 out, minus q: int8 in and out (inside a requantized chain)

Outputs are extracted as the layer left them (packed, int8 not cast back). Rounds alternate over the forms of
a shape and the model's whole fp32 and fast files (load on a shared machine hits all alike); a round takes the
best of R runs of a one-layer net; the table shows the best round (min) and the median round, in
microseconds of the running thread's CPU time, and int8 (i8) / fp32. Per model it then sums the layers
(times their count): fp32, fast mode's placement, every layer at its faster form of fp32 / i8, and the share
of depthwise time; and from the whole files' best runs the rest of the net (fp32 file minus its layers:
input, BinaryOp, Split, pooling...) and the speed-up a placement could reach with it: fast's, every layer at
its faster form, and every layer at its fastest form of the five (a bound: a layer reads int8 only from an
int8 producer). Runs happen in this process: run it on its own.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import importlib  # noqa: E402
from converter import convert  # noqa: E402
from converter.ir import Node  # noqa: E402
from converter.ncnn_side.writer import format_float, weight_bytes  # noqa: E402
from scripts.bench_int8 import MODELS, feeds_at, timing_net  # noqa: E402
from scripts.quantize_models import quantized  # noqa: E402

# the module, not the pass function passes/__init__.py exports under the same name
apply_int8 = importlib.import_module("passes.apply_int8")

LAYERS = ("Convolution", "ConvolutionDepthWise", "InnerProduct")
FORMS = ("pack", "fp32", "i8", "i8>q", "q", "q>i8", "q>i8>q")


def int8_graph(float_name: str):
    """The fast-mode graph with every planned layer int8, and its input feeds."""
    int8_name, size = MODELS[float_name]
    feeds = feeds_at(int8_name, size)
    saved = apply_int8._fast_float
    apply_int8._fast_float = lambda graph, node: None
    try:
        model = convert(str(quantized(int8_name)), input_shapes={k: list(v.shape) for k, v in feeds.items()},
                        int8="fast")
    finally:
        apply_int8._fast_float = saved
    return model.graph


def fast_float(graph, node: Node) -> bool:
    """Whether fast mode (as committed) keeps this layer float."""
    return apply_int8._fast_float(graph, node) is not None


def float_form(node: Node) -> Node:
    """The fp32 layer holding the int8 layer's dequantized weights."""
    params = {k: v for k, v in node.params.items() if k != 8}
    weights = node.weights
    if int(node.params.get(8, 0)):
        q, scales = np.asarray(weights[0], np.float32), np.asarray(weights[2], np.float32)
        rows = scales.size
        inv = np.divide(1, scales, out=np.zeros_like(scales), where=scales != 0)
        weights = [(q.reshape(rows, -1) * inv[:, None]).ravel(), *weights[1:len(weights) - 2]]
    return Node(node.name, node.op, ["in"], ["out"], params=params, weights=weights, ncnn=True)


def requant_form(node: Node) -> Node:
    weights = [*node.weights, np.array([8.0], np.float32)]
    return Node(node.name, node.op, ["in"], ["out"], params={**node.params, 8: 101}, weights=weights, ncnn=True)


def layer_text(node: Node, bottom: str) -> str:
    from converter.ncnn_side.writer import NcnnNames, layer_line
    names = NcnnNames({"in": bottom, "out": "out"}, {node.name: "layer"})
    return layer_line(Node(node.name, node.op, ["in"], ["out"], params=node.params, weights=node.weights), names)


def input_line(shape: tuple) -> str:
    dims = list(reversed(shape))            # ncnn's Input: 0=w 1=h 2=c
    return "Input in 0 1 in " + " ".join(f"{k}={d}" for k, d in enumerate(dims))


class Net:
    def __init__(self, tmp: Path, tag: str, shape: tuple, layer: Node | str | None, quantize: float | None):
        import ncnn
        lines, data = [input_line(shape)], b""
        bottom = "in"
        if quantize is not None:
            lines.append(f"Quantize q 1 1 in qin 0=1")
            data += np.array([quantize], np.float32).tobytes()
            bottom = "qin"
        top = bottom
        if isinstance(layer, str):
            lines.append(f"{layer} layer 1 1 {bottom} out")
            top = "out"
        elif layer is not None:
            lines.append(layer_text(layer, bottom))
            data += weight_bytes(layer)
            top = "out"
        param, bin_ = tmp / f"{tag}.param", tmp / f"{tag}.bin"
        blobs = len(lines)
        param.write_text(f"7767517\n{len(lines)} {blobs}\n" + "\n".join(lines) + "\n")
        bin_.write_bytes(data)
        self.ncnn, self.top = ncnn, top
        self.net = timing_net(param, bin_)
        self.array = np.ascontiguousarray(np.random.default_rng(0).normal(0, 1, shape).astype(np.float32))
        self.rounds: list[float] = []

    def run(self, repeat: int) -> None:
        best = float("inf")
        for _ in range(repeat):
            start = time.thread_time()
            ex = self.net.create_extractor()
            ex.input("in", self.ncnn.Mat(self.array).clone())      # owned: ReLU works in place
            ret, mat = ex.extract(self.top, 1)      # as the layer left it: no unpacking, no int8 -> float cast
            del mat, ex          # the Mat first: it lives in the extractor's pool (type 1 does not detach it)
            best = min(best, time.thread_time() - start)
            assert ret == 0
        self.rounds.append(1e6 * best)


def shape_key(graph, node: Node) -> tuple:
    params = tuple(sorted((k, tuple(v) if isinstance(v, (list, tuple)) else v) for k, v in node.params.items()))
    return node.op, graph.tensors[node.inputs[0]].ncnn_shape, params


def describe(op: str, shape: tuple, node: Node) -> str:
    p = node.params
    kind = {"Convolution": "conv", "ConvolutionDepthWise": "dw", "InnerProduct": "fc"}[op]
    if op == "InnerProduct":
        return f"{kind} {'x'.join(map(str, shape))}->{p[0]}"
    k = f"{p.get(1, 1)}x{p.get(11, p.get(1, 1))}"
    s = f"{p.get(3, 1)}" if p.get(13, p.get(3, 1)) == p.get(3, 1) else f"{p.get(3, 1)}x{p[13]}"
    act = {0: "", 1: " relu", 2: " leaky", 3: " clip", 4: " sigmoid", 5: " mish", 6: " hswish"}[p.get(9, 0)]
    return f"{kind} {k}/s{s} {'x'.join(map(str, shape))}->{p[0]}{act}"


def profile(float_name: str, rounds: int, repeat: int) -> None:
    graph = int8_graph(float_name)
    groups: dict[tuple, list[Node]] = {}
    for node in graph.topological():
        if node.op in LAYERS:
            groups.setdefault(shape_key(graph, node), []).append(node)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        whole = whole_nets(float_name, Path(tmp))
        for k, (key, nodes) in enumerate(groups.items()):
            node, shape = nodes[0], key[1]
            int8 = bool(int(node.params.get(8, 0)))
            nets = {"pack": Net(Path(tmp), f"{k}p", shape, "ReLU", None),
                    "fp32": Net(Path(tmp), f"{k}f", shape, float_form(node), None)}
            if int8:
                scale = float(np.asarray(node.weights[-1]).ravel()[0])
                nets.update({"i8": Net(Path(tmp), f"{k}i", shape, node, None),
                             "i8>q": Net(Path(tmp), f"{k}r", shape, requant_form(node), None),
                             "q": Net(Path(tmp), f"{k}q", shape, None, scale),
                             "q>i8": Net(Path(tmp), f"{k}qi", shape, node, scale),
                             "q>i8>q": Net(Path(tmp), f"{k}qr", shape, requant_form(node), scale)})
            for net in nets.values():
                net.run(1)                      # warm-up
                net.rounds.clear()
            for _ in range(rounds):
                for net in [*nets.values(), *whole.values()]:      # the whole nets run in every round too
                    net.run(repeat) if isinstance(net, Net) else net.run()
            best = {f: min(n.rounds) for f, n in nets.items()}
            median = {f: statistics.median(n.rounds) for f, n in nets.items()}
            for f in ("q>i8", "q>i8>q", "fp32", "i8", "i8>q", "q"):      # q last: the others subtract it
                if f in best:
                    base = "q" if f.startswith("q>") else "pack"
                    best[f] -= best[base]
                    median[f] -= median[base]
            fast_int8 = int8 and not fast_float(graph, node)
            rows.append((describe(key[0], shape, node), len(nodes), key[0], best, median, int8, fast_int8))
    print(f"\n{float_name} (one-layer nets, us of thread CPU time: min / median of {rounds} alternating rounds, "
          f"each the best of {repeat} runs; q>i8 and q>i8>q have q subtracted)")
    print(f"{'layer':44s} {'n':>2s} " + " ".join(f"{f:>13s}" for f in FORMS) + "  i8/fp32 fast")
    total = {"fp32": 0.0, "fast": 0.0, "best": 0.0, "any": 0.0, "dw_fp32": 0.0, "dw_i8": 0.0}
    for name, count, op, best, median, int8, fast_int8 in rows:
        cells = [f"{best[f]:6.0f}/{median[f]:6.0f}" if f in best else f"{'-':>13s}" for f in FORMS]
        ratio = f"{best['i8'] / best['fp32']:.2f}" if int8 else "   -"
        print(f"{name:44s} {count:2d} " + " ".join(cells) + f"  {ratio:>7s} {'int8' if fast_int8 else 'fp32'}")
        total["fp32"] += count * best["fp32"]
        total["fast"] += count * best["i8" if fast_int8 else "fp32"]
        total["best"] += count * min(best["fp32"], best.get("i8", np.inf))
        total["any"] += count * min(best[f] for f in FORMS[1:] if f in best and f != "q")
        if op == "ConvolutionDepthWise":
            total["dw_fp32"] += count * best["fp32"]
            total["dw_i8"] += count * best.get("i8", best["fp32"])
    print(f"sum of layers (min): fp32 {total['fp32'] / 1e3:.2f} ms, fast placement {total['fast'] / 1e3:.2f} ms "
          f"({total['fp32'] / total['fast']:.2f}x), each layer at its faster form {total['best'] / 1e3:.2f} ms "
          f"({total['fp32'] / total['best']:.2f}x); depthwise {total['dw_fp32'] / 1e3:.2f} ms fp32 "
          f"({100 * total['dw_fp32'] / total['fp32']:.0f}% of fp32 layers, "
          f"{100 * total['dw_fp32'] / total['fast']:.0f}% of fast), {total['dw_i8'] / 1e3:.2f} ms int8")
    fp32, fast = min(whole["fp32"].times), min(whole["fast"].times)
    glue = fp32 - total["fp32"] / 1e3

    def bound(layers: float) -> str:
        return f"{fp32 / (glue + layers / 1e3):.2f}x"
    print(f"whole nets (min of their runs in every round above): fp32 {fp32:.2f} ms, fast {fast:.2f} ms "
          f"({fp32 / fast:.2f}x); the rest of the fp32 net (input, glue) {glue:.2f} ms. With it: fast's layers "
          f"{bound(total['fast'])}, each layer at its faster form {bound(total['best'])}, each at its fastest "
          f"of the five forms (int8 in and out where faster: a bound, since int8 in needs an int8 producer) "
          f"{bound(total['any'])}", flush=True)


def whole_nets(float_name: str, tmp: Path) -> dict:
    """The fp32 file and the fast file of the model (fast mode's placement as committed), loaded and warm;
    they run once in every round of every layer (so the rest of the net, whole minus its layers, is
    measured under the same load as the layers)."""
    from scripts.bench_int8 import Loaded
    from scripts.quantize_models import QUANTIZED
    int8_name, size = MODELS[float_name]
    feeds = feeds_at(int8_name, size)
    nets = {"fp32": Loaded(str(QUANTIZED[int8_name].source()), feeds, tmp, "whole_fp32"),
            "fast": Loaded(str(quantized(int8_name)), feeds, tmp, "whole_fast", mode="fast")}
    for net in nets.values():
        net.run()
        net.times.clear()
    return nets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", default=["mobilenet_v2_224", "ppocrv4_rec"], choices=list(MODELS))
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    for name in args.models:
        profile(name, args.rounds, args.repeat)


if __name__ == "__main__":
    main()
