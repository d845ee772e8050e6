"""Time one self-attention block in the real ncnn runtime written two ways: one MultiHeadAttention
layer, and the Gemm -> Reshape -> Permute -> Slice -> SDPA -> Permute -> Reshape -> Gemm chain
(passes/expand_small_attention.py picks between them by these numbers).

Usage: python scripts/attention_forms.py [--threads N] T,E,H [T,E,H ...]
Prints each form's median time, their ratio (below 1: the SDPA chain is faster), best-time ratio,
and each form's largest difference from a numpy reference. The machine is shared: read, never assert.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

FP32_OFF = ("use_fp16_storage", "use_fp16_arithmetic", "use_fp16_packed", "use_bf16_storage")


def _flagged(a: np.ndarray) -> np.ndarray:
    """A weight ncnn reads with a leading type flag (0: float32)."""
    return np.concatenate([np.zeros(1, np.float32), a.ravel()])


def _write(stem: Path, lines: list[str], blobs: int, weights: list[np.ndarray]) -> None:
    stem.with_suffix(".param").write_text(f"7767517\n{len(lines)} {blobs}\n" + "\n".join(lines) + "\n")
    np.concatenate(weights).astype(np.float32).tofile(stem.with_suffix(".bin"))


def one_layer(stem: Path, t: int, e: int, h: int, w: list[np.ndarray], scale: float) -> None:
    wq, bq, wk, bk, wv, bv, wo, bo = w          # weights (out, in), as ncnn stores them
    _write(stem, [f"Input in 0 1 x 0={e} 1={t}",
                  f"MultiHeadAttention mha 1 1 x y 0={e} 1={h} 2={e * e} 3={e} 4={e} 5=0 6={scale:e}"],
           2, [_flagged(wq), bq, _flagged(wk), bk, _flagged(wv), bv, _flagged(wo), bo])


def sdpa_chain(stem: Path, t: int, e: int, h: int, w: list[np.ndarray], scale: float) -> None:
    wq, bq, wk, bk, wv, bv, wo, bo = w
    d = e // h
    gemm = "10=4 2=0 3=1 4=0 5=1 6=1"
    _write(stem, [f"Input in 0 1 x 0={e} 1={t}",
                  f"Gemm qkv 1 1 x qkv {gemm} 7={t} 8={3 * e} 9={e}",
                  f"Reshape split 1 1 qkv split 0={d} 1={3 * h} 2={t}",
                  "Permute heads 1 1 split heads 0=2",
                  f"Slice cut 1 3 heads q k v -23300=3,{h},{h},{h} 1=0",
                  f"SDPA sdpa 3 1 q k v att 5=0 6={scale:e}",
                  "Permute rows 1 1 att rows 0=2",
                  f"Reshape merge 1 1 rows merged 0={e} 1={t}",
                  f"Gemm out 1 1 merged y {gemm} 7={t} 8={e} 9={e}"],
           12, [_flagged(np.concatenate([wq, wk, wv])), _flagged(np.concatenate([bq, bk, bv])), _flagged(wo),
                _flagged(bo)])


def reference(x, h, w, scale):
    wq, bq, wk, bk, wv, bv, wo, bo = w
    t, e = x.shape
    q, k, v = ((x @ a.T + b).reshape(t, h, e // h).transpose(1, 0, 2) for a, b in ((wq, bq), (wk, bk), (wv, bv)))
    s = q @ k.transpose(0, 2, 1) * scale
    p = np.exp(s - s.max(-1, keepdims=True))
    return ((p / p.sum(-1, keepdims=True)) @ v).transpose(1, 0, 2).reshape(t, e) @ wo.T + bo


def runner(stem: Path, x: np.ndarray, threads: int):
    import ncnn
    net = ncnn.Net()
    for opt in FP32_OFF:
        setattr(net.opt, opt, False)
    net.opt.num_threads = threads
    assert net.load_param(str(stem.with_suffix(".param"))) == 0 and net.load_model(str(stem.with_suffix(".bin"))) == 0
    mat = ncnn.Mat(x).clone()

    def run():
        ex = net.create_extractor()
        ex.input("x", mat)
        return np.array(ex.extract("y")[1])
    run.net = net
    return run


def compare(t: int, e: int, h: int, threads: int, folder: Path, rounds: int = 6) -> str:
    rng = np.random.default_rng(0)
    w = [rng.uniform(-0.3, 0.3, (e, e) if i % 2 == 0 else e).astype(np.float32) for i in range(8)]
    x = rng.standard_normal((t, e)).astype(np.float32)
    scale = float(1 / np.sqrt(e // h))
    one_layer(folder / "mha", t, e, h, w, scale)
    sdpa_chain(folder / "sdpa", t, e, h, w, scale)
    runs = [runner(folder / "mha", x, threads), runner(folder / "sdpa", x, threads)]
    want = reference(x, h, w, scale)
    errors = [float(np.abs(r() - want).max()) for r in runs]
    start = time.perf_counter()
    runs[0]()
    per_block = max(3, int(0.3 / max(time.perf_counter() - start, 1e-6)))
    times = [[], []]
    for r in range(rounds):                 # alternating blocks, the order reversed every round
        for i in ((0, 1) if r % 2 == 0 else (1, 0)):
            runs[i]()
            for _ in range(per_block):
                start = time.perf_counter()
                runs[i]()
                times[i].append(time.perf_counter() - start)
    (ma, mb), (ba, bb) = (statistics.median(s) for s in times), (min(s) for s in times)
    return (f"T={t} E={e} H={h}: MultiHeadAttention {ma * 1e3:.4f} ms, SDPA chain {mb * 1e3:.4f} ms, "
            f"ratio {mb / ma:.2f} (best {bb / ba:.2f}); max error {errors[0]:.1e} / {errors[1]:.1e}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("sizes", nargs="+", help="T,E,H")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for spec in args.sizes:
            t, e, h = map(int, spec.split(","))
            print(compare(t, e, h, args.threads, Path(tmp)), flush=True)


if __name__ == "__main__":
    main()
