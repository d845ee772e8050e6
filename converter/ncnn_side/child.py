"""Run .param/.bin files in the ncnn installed for another Python (verify --ncnn-python PATH).

This file is run as a script by that Python, which needs only numpy and ncnn (not onnx2ncnn):

    PATH ncnn_child.py --version                          prints the ncnn version it imports
    PATH ncnn_child.py PARAM BIN THREADS PRECISION < feeds.npz > outputs.npz

Feeds come as an .npz on stdin (the wanted outputs under the key `__outputs__`), outputs go back
as an .npz on stdout; a failure is one line on stderr and exit 3 (a crash: the signal). The
caller side is `run_with_python`, imported by converter/ncnn_side/runtime.py.
"""
from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import numpy as np

OUTPUTS_KEY = "__outputs__"
FP16_OPTIONS = ("use_fp16_storage", "use_fp16_arithmetic", "use_fp16_packed")


class ChildError(RuntimeError):
    pass


class ChildCrash(RuntimeError):
    pass


def configure_net(net, precision: str, threads: int) -> None:
    """fp32: exact arithmetic, every reduced-precision path off (fp16: as a device runs); int8 stays
    on, it only changes layers that hold int8 weights (without it they would read them as float)."""
    for opt in (*FP16_OPTIONS, "use_bf16_storage", "use_vulkan_compute"):
        if hasattr(net.opt, opt):
            setattr(net.opt, opt, precision == "fp16" and opt in FP16_OPTIONS)
    net.opt.use_int8_inference = True
    net.opt.num_threads = threads


def input_mat(ncnn, array):
    """A Mat that owns its data: one wrapping numpy memory segfaults when an in-place layer writes
    to it. int32 keeps its bits (Embed reads word indices as int32); everything else is float32."""
    array = np.asarray(array)
    array = np.ascontiguousarray(array, dtype=np.int32 if array.dtype == np.int32 else np.float32)
    return ncnn.Mat(array).clone()


def _serve(param: str, bin_: str, threads: int, precision: str) -> int:
    import ncnn
    request = np.load(io.BytesIO(sys.stdin.buffer.read()), allow_pickle=False)
    net = ncnn.Net()
    configure_net(net, precision, threads)
    if net.load_param(param) != 0 or net.load_model(bin_) != 0:
        print(f"ncnn {ncnn.__version__} could not load {param}", file=sys.stderr)
        return 3
    ex = net.create_extractor()
    for name in request.files:
        if name != OUTPUTS_KEY:
            ex.input(name, input_mat(ncnn, request[name]))
    result = {}
    for name in request[OUTPUTS_KEY].tolist():
        ret, mat = ex.extract(name)
        if ret != 0:
            print(f"ncnn {ncnn.__version__} failed to compute blob {name!r} (code {ret})", file=sys.stderr)
            return 3
        result[name] = np.array(mat).copy()
    buffer = io.BytesIO()
    np.savez(buffer, **result)
    sys.stdout.buffer.write(buffer.getvalue())
    return 0


def run_with_python(python: str, param, bin_, feeds: dict, outputs: list[str], precision: str = "fp32",
                    threads: int = 2, timeout: float = 600) -> dict[str, np.ndarray]:
    """Run the files in `python`'s ncnn; ChildError for a refusal, ChildCrash for a crash."""
    buffer = io.BytesIO()
    np.savez(buffer, **{k: np.asarray(v) for k, v in feeds.items()}, **{OUTPUTS_KEY: np.array(list(outputs))})
    try:
        done = subprocess.run([python, "-I", str(Path(__file__).resolve()), str(param), str(bin_), str(threads), precision],
                              input=buffer.getvalue(), capture_output=True, timeout=timeout)
    except OSError as exc:
        raise ChildError(f"cannot run {python}: {exc.strerror or exc}") from None
    if done.returncode < 0:
        raise ChildCrash(f"the ncnn runtime of {python} crashed (signal {-done.returncode}) running {param}")
    if done.returncode != 0:
        lines = done.stderr.decode(errors="replace").strip().splitlines() or [f"exit code {done.returncode}"]
        raise ChildError(lines[-1])
    result = np.load(io.BytesIO(done.stdout), allow_pickle=False)
    return {name: result[name] for name in result.files}


def ncnn_version(python: str) -> str:
    """The version of the ncnn `python` imports; ChildError when it cannot."""
    try:
        done = subprocess.run([python, "-I", str(Path(__file__).resolve()), "--version"], capture_output=True, timeout=120)
    except OSError as exc:
        raise ChildError(f"--ncnn-python {python}: cannot run it ({exc.strerror or exc})") from None
    if done.returncode != 0:
        raise ChildError(f"--ncnn-python {python}: it cannot import ncnn and numpy (pip install ncnn numpy)")
    return done.stdout.decode().strip()


if __name__ == "__main__":
    if sys.argv[1:] == ["--version"]:
        import ncnn
        print(ncnn.__version__)
        sys.exit(0)
    sys.exit(_serve(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]))
