"""Time each layer of an ncnn file in the real runtime (ncnn's python module has no profiler).

One extractor computes the layers one at a time: extracting the layers' output blobs in file order
makes each extract run exactly one new layer (the ones before it are cached in the extractor), so
its time is that layer's, plus python's call overhead, measured on an extract of a cached blob and
subtracted. Repeated `rounds` times; each layer's median is kept. Used by
`scripts/bench_vs_pnnx.py --profile`; the numbers are for comparing two files, not absolute.
"""
from __future__ import annotations

import collections
import statistics
import time
from pathlib import Path

import numpy as np


def param_layers(param: Path) -> list[tuple[str, str, list[str]]]:
    """(type, name, output blobs) of each layer in file order."""
    layers = []
    for line in param.read_text().splitlines()[2:]:
        parts = line.split()
        if len(parts) < 4:
            continue
        n_in, n_out = int(parts[2]), int(parts[3])
        layers.append((parts[0], parts[1], parts[4 + n_in:4 + n_in + n_out]))
    return layers


def layer_times_ms(net, param: Path, mats: list, rounds: int = 9) -> list[tuple[str, str, float]]:
    """(type, name, median ms) of each non-Input layer of `net` (loaded from `param`), fed `mats`."""
    layers = [layer for layer in param_layers(param) if layer[0] != "Input" and layer[2]]
    inputs = net.input_names()
    samples = [[] for _ in layers]
    overhead = []
    for _ in range(rounds):
        ex = net.create_extractor()
        for name, mat in zip(inputs, mats):
            ex.input(name, mat)
        for (_, _, outs), times in zip(layers, samples):
            start = time.perf_counter()
            ex.extract(outs[0])
            times.append(time.perf_counter() - start)
        start = time.perf_counter()
        ex.extract(layers[-1][2][0])          # cached: only python's call overhead
        overhead.append(time.perf_counter() - start)
    base = min(overhead)
    return [(kind, name, max(0.0, statistics.median(t) - base) * 1e3) for (kind, name, _), t in zip(layers, samples)]


def by_type(times: list[tuple[str, str, float]]) -> collections.Counter:
    """Total ms per layer type."""
    total: collections.Counter = collections.Counter()
    for kind, _, ms in times:
        total[kind] += ms
    return total


def describe(times: list[tuple[str, str, float]], top: int = 8) -> str:
    """The layer types taking the most time, with the count of layers of each."""
    counts = collections.Counter(kind for kind, _, _ in times)
    total = by_type(times)
    return " ".join(f"{kind}:{ms:.3f}({counts[kind]})" for kind, ms in total.most_common(top)) + \
        f"  sum {sum(total.values()):.3f} ms"


def profile_array_feeds(param: Path, bin_: Path, feeds: list[np.ndarray], threads: int = 1):
    """Per-layer times of a file fed numpy arrays (fp32: fp16/bf16 off)."""
    import ncnn
    net = ncnn.Net()
    for opt in ("use_fp16_storage", "use_fp16_arithmetic", "use_fp16_packed", "use_bf16_storage"):
        setattr(net.opt, opt, False)
    net.opt.num_threads = threads
    if net.load_param(str(param)) != 0 or net.load_model(str(bin_)) != 0:
        return None
    mats = [ncnn.Mat(f).clone() for f in feeds]
    return layer_times_ms(net, param, mats)
