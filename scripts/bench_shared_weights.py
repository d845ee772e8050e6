"""Speed of one weight shared by several Gemms (one MemoryData, a Split, Gemms reading B as a blob)
against each Gemm holding its own copy (constant B), in the real ncnn runtime.

    python scripts/bench_shared_weights.py [--threads 1] [--repeat 20]

For each size (M rows, K -> N), a chain of COPIES Gemms y = x @ W^T + b with the same W is written
both ways; prints the median ms of each and the ratio shared/copies (issue 28: weights are shared
where the ratio stays within 1.1). The machine is shared and noisy: read the ratios.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

COPIES = 4
SIZES = [(1, 256, 256), (24, 1024, 1024), (256, 512, 512), (24, 1024, 3072)]


def _gemm(name: str, bottoms: list[str], top: str, m: int, k: int, n: int, constant_b: bool) -> str:
    return (f"Gemm {name} {len(bottoms)} 1 {' '.join(bottoms)} {top} 0=1.0 1=1.0 2=0 3=1 4=0 "
            f"5={int(constant_b)} 6=1 7={m} 8={n} 9={k} 10=4")


def write_pair(folder: Path, m: int, k: int, n: int) -> dict[str, tuple[Path, Path]]:
    """Chains of square Gemms (k == n) or, when k != n, COPIES Gemms reading the input side by side."""
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((n, k)) / np.sqrt(k)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    chain = k == n
    tops = [f"y{i}" for i in range(COPIES)]
    srcs = ["x"] + tops[:-1] if chain else [f"x{i}" for i in range(COPIES)]
    head = [] if chain else [f"Split xs 1 {COPIES} x {' '.join(srcs)}"]
    files = {}
    for form in ("copies", "shared"):
        lines, weights = [f"Input in 0 1 x 0={k} 1={m}"] + head, []
        if form == "shared":
            lines += [f"MemoryData w 0 1 W 0={k} 1={n}",
                      f"Split ws 1 {COPIES} W {' '.join(f'W{i}' for i in range(COPIES))}"]
            weights.append(w.tobytes())
        for i in range(COPIES):
            if form == "copies":
                lines.append(_gemm(f"g{i}", [srcs[i]], tops[i], m, k, n, True))
                weights += [np.zeros(1, np.uint32).tobytes(), w.tobytes()]
            else:
                lines.append(_gemm(f"g{i}", [srcs[i], f"W{i}"], tops[i], m, k, n, False))
            weights += [np.zeros(1, np.uint32).tobytes(), b.tobytes()]      # C is flagged too
        if not chain:
            lines.append(f"Concat out {COPIES} 1 {' '.join(tops)} y 0=0")
        blobs = {t for line in lines for t in line.split()[4:4 + int(line.split()[2]) + int(line.split()[3])]}
        param, bin_ = folder / f"{form}.param", folder / f"{form}.bin"
        param.write_text(f"7767517\n{len(lines)} {len(blobs)}\n" + "\n".join(lines) + "\n")
        bin_.write_bytes(b"".join(weights))
        files[form] = (param, bin_)
    return files


def median_ms(param: Path, bin_: Path, x: np.ndarray, out: str, threads: int, repeat: int) -> float:
    import ncnn
    net = ncnn.Net()
    for option in ("use_fp16_storage", "use_fp16_arithmetic", "use_fp16_packed", "use_bf16_storage"):
        setattr(net.opt, option, False)
    net.opt.num_threads = threads
    assert net.load_param(str(param)) == 0 and net.load_model(str(bin_)) == 0
    times = []
    for i in range(repeat + 1):
        start = time.perf_counter()
        ex = net.create_extractor()
        ex.input("x", ncnn.Mat(x).clone())
        ex.extract(out)
        if i:
            times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        for m, k, n in SIZES:
            folder = Path(tmp) / f"{m}_{k}_{n}"
            folder.mkdir()
            files = write_pair(folder, m, k, n)
            x = np.random.default_rng(1).standard_normal((m, k)).astype(np.float32)
            out = f"y{COPIES - 1}" if k == n else "y"
            ms = {form: [] for form in files}
            for _ in range(3):          # alternate the two forms so load changes hit both
                for form, (param, bin_) in files.items():
                    ms[form].append(median_ms(param, bin_, x, out, args.threads, args.repeat))
            copies, shared = min(ms["copies"]), min(ms["shared"])
            print(f"M={m:4d} K={k:5d} N={n:5d} x{COPIES}: copies {copies:8.3f} ms  shared {shared:8.3f} ms  "
                  f"shared/copies {shared / copies:.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
