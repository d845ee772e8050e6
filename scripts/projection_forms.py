"""Which ncnn layer form runs a decoder's constant-weight projections fastest: each projection shape of a
Qwen2.5-0.5B-shaped decoder timed alone in the real ncnn, 1 thread, in every exactly equivalent form.

    .venv/bin/python scripts/projection_forms.py [--rows 1 32] [--rounds 5] [--repeat 3] [--only NAME ...] [--cold]

Each shape (N outputs, K inputs, random weights) becomes a one-layer net fed x of M rows (the blob [K, M],
as the decoder's RMSNorm leaves it) in these forms:

    gemm      Gemm, constant B = W as stored (transB=1), x as A: what the decoder files held before
    gemmA     Gemm, constant A = W, x as B (transB=1), output_transpose=1: the same [N, M] out
    ip        InnerProduct on the 2-D blob (ncnn's row-wise innerproduct_gemm kernel)
    ip1       InnerProduct on a 1-D blob (ncnn's gemv kernel, packed weights): M = 1 only, fed [K]
    ip*16     the InnerProduct forms with ncnn's default options: x86 with F16C then keeps the weights in
              fp16 (not exact: the table prints the largest deviation from float64 over the largest |y|);
              M = 1 only: on 32 rows this path flattened the blob (one row of N out, pip 1.0.20261020)

Rounds alternate over a shape's forms (load on a shared machine hits all alike); a round takes the best
of R runs; the table shows the best round (min) and the median round in microseconds of the running
thread's CPU time, and each form / ort (onnxruntime's MatMul on the same weights and rows). Runs happen
in this process: run it on its own. --cold writes 64 MB before each run, so the weights come from memory
as in a whole 2 GB decoder (the small projections otherwise stay in the last-level cache).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

# name: (N, K, bias)
SHAPES = {"qkv": (1152, 896, True), "o_proj": (896, 896, False), "gate/up": (4864, 896, False),
          "gate+up": (9728, 896, False), "down": (896, 4864, False), "lm_head": (151936, 896, False)}
FP32_OFF = ("use_fp16_storage", "use_fp16_arithmetic", "use_fp16_packed", "use_bf16_storage")


def layer(form: str, n: int, k: int, bias: bool) -> str:
    if form == "gemm":
        return f"Gemm l 1 1 in out 3=1 4=0 5=1 6={int(bias)} 7=0 8={n} 9={k} 10={4 if bias else -1}"
    if form == "gemmA":
        return f"Gemm l 1 1 in out 3=1 4=1 5=0 6={int(bias)} 7={n} 8=0 9={k} 10={1 if bias else -1} 14=1"
    return f"InnerProduct l 1 1 in out 0={n} 1={int(bias)} 2={n * k}"


def weights(form: str, w: np.ndarray, b: np.ndarray | None) -> bytes:
    flag = np.uint32(0).tobytes()              # the float32 type tag (Gemm's C has one, InnerProduct's bias not)
    bias = b"" if b is None else (flag if form.startswith("gemm") else b"") + b.tobytes()
    return flag + w.tobytes() + bias


class Ort:
    """onnxruntime's MatMul (+ Add) on the same weights, 1 thread: the reference the decoder is held to."""

    def __init__(self, tmp: Path, tag: str, w: np.ndarray, b: np.ndarray | None, x: np.ndarray):
        import onnx
        import onnxruntime as ort
        from onnx import TensorProto, helper, numpy_helper
        n, k = w.shape
        inits = [numpy_helper.from_array(np.ascontiguousarray(w.T), "w")]
        nodes = [helper.make_node("MatMul", ["x", "w"], ["y" if b is None else "xw"])]
        if b is not None:
            inits.append(numpy_helper.from_array(b, "b"))
            nodes.append(helper.make_node("Add", ["xw", "b"], ["y"]))
        graph = helper.make_graph(nodes, "p", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [x.shape[0], n])], inits)
        path = tmp / f"{tag}.onnx"
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path,
                  save_as_external_data=True, location=f"{tag}.data")
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = opts.inter_op_num_threads = 1
        self.sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        self.x = x
        self.rounds: list[float] = []

    def run(self, repeat: int, keep: bool = False, cold: np.ndarray | None = None) -> np.ndarray | None:
        best, out = float("inf"), None
        for _ in range(repeat):
            if cold is not None:
                cold += 1
            start = time.thread_time()
            out = self.sess.run(None, {"x": self.x})[0]
            best = min(best, time.thread_time() - start)
        self.rounds.append(1e6 * best)
        return out


class Net:
    def __init__(self, tmp: Path, tag: str, form: str, w: np.ndarray, b: np.ndarray | None, x: np.ndarray):
        import ncnn
        n, k = w.shape
        param, bin_ = tmp / f"{tag}.param", tmp / f"{tag}.bin"
        param.write_text(f"7767517\n2 2\nInput in 0 1 in\n{layer(form.rstrip('16'), n, k, b is not None)}\n")
        bin_.write_bytes(weights(form, w, b))
        self.ncnn, self.net = ncnn, ncnn.Net()
        if not form.endswith("16"):
            for opt in FP32_OFF:
                setattr(self.net.opt, opt, False)
        self.net.opt.num_threads = 1
        self.net.load_param(str(param))
        self.net.load_model(str(bin_))
        bin_.unlink()
        self.x = np.ascontiguousarray(x[0] if form.startswith("ip1") else x)
        self.rounds: list[float] = []

    def run(self, repeat: int, keep: bool = False, cold: np.ndarray | None = None) -> np.ndarray | None:
        best, out = float("inf"), None
        mat_in = self.ncnn.Mat(self.x).clone()
        for _ in range(repeat):
            if cold is not None:
                cold += 1           # written through: the weights leave the caches, as in a 2 GB model
            start = time.thread_time()
            ex = self.net.create_extractor()
            ex.input("in", mat_in)
            ret, mat = ex.extract("out")
            best = min(best, time.thread_time() - start)
            assert ret == 0
            if keep:
                out = np.array(mat).copy()
            del mat, ex
        self.rounds.append(1e6 * best)
        return out


def profile(name: str, rows: int, rounds: int, repeat: int, tmp: Path, cold: np.ndarray | None) -> None:
    n, k, bias = SHAPES[name]
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((n, k)) * 0.02).astype(np.float32)
    b = (rng.standard_normal(n) * 0.1).astype(np.float32) if bias else None
    x = rng.standard_normal((rows, k)).astype(np.float32)
    ref = x.astype(np.float64) @ w.astype(np.float64).T + (0 if b is None else b)
    forms = ["ort", "gemm", "gemmA", "ip", *(["ip1", "ip16", "ip116"] if rows == 1 else [])]
    nets, dev = {}, {}
    for f in forms:
        tag = f"{name.replace('/', '_')}_{rows}_{f}"
        nets[f] = Ort(tmp, tag, w, b, x) if f == "ort" else Net(tmp, tag, f, w, b, x)
        y = nets[f].run(1, keep=True).reshape(rows, n)
        dev[f] = float(np.abs(y - ref).max() / np.abs(ref).max())
        nets[f].rounds.clear()
    for _ in range(rounds):
        for net in nets.values():
            net.run(repeat, cold=cold)
    best = {f: min(net.rounds) for f, net in nets.items()}
    med = {f: statistics.median(net.rounds) for f, net in nets.items()}
    cells = "  ".join(f"{f} {best[f]:8.0f}/{med[f]:8.0f} {best[f] / best['ort']:4.2f}/{med[f] / med['ort']:4.2f} "
                      f"({dev[f]:.0e})" for f in forms)
    print(f"{name:8} {rows:3} x {k}->{n:<6} {cells}", flush=True)
    del nets


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[1, 32])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", nargs="+", choices=sorted(SHAPES))
    ap.add_argument("--cold", action="store_true", help="write 64 MB before each run (weights out of the caches)")
    args = ap.parse_args()
    cold = np.zeros(16 << 20, np.float32) if args.cold else None
    print(f"1 thread; per form: min/median us of {args.rounds} alternating rounds (best of {args.repeat} runs "
          f"each), min/median ratio to ort, (largest |y - float64| / largest |y|)")
    with tempfile.TemporaryDirectory() as tmp:
        for rows in args.rows:
            for name in args.only or SHAPES:
                profile(name, rows, args.rounds, args.repeat, Path(tmp), cold)


if __name__ == "__main__":
    sys.exit(main())
