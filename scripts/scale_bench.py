"""Conversion time for growing broadcast-heavy graphs: should grow about linearly.

Usage: python scripts/scale_bench.py [N ...]   (default 2500 5000 10000 20000 40000)
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from converter.onnx_side.loader import load_onnx  # noqa: E402
from passes import run_pipeline  # noqa: E402
from scripts.broadcast_chain import broadcast_chain  # noqa: E402


def main(sizes: list[int]) -> None:
    print(f"{'nodes':>8} {'load s':>8} {'passes s':>9} {'fix_broadcast s':>16} {'us/node':>8}")
    for n in sizes:
        model = broadcast_chain(n)
        t0 = time.perf_counter()
        graph = load_onnx(model)
        t1 = time.perf_counter()
        stats = run_pipeline(graph)
        t2 = time.perf_counter()
        fix = stats["pass_seconds"]["fix_broadcast"]
        print(f"{n:>8} {t1 - t0:>8.2f} {t2 - t1:>9.2f} {fix:>16.3f} {(t2 - t0) / n * 1e6:>8.0f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Conversion time for growing broadcast chains.")
    parser.add_argument("sizes", nargs="*", type=int, default=[2500, 5000, 10000, 20000, 40000])
    main(parser.parse_args().sizes)
