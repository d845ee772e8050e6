"""Run .param/.bin files in the real ncnn runtime (`pip install ncnn`), in a child process.

The real runtime segfaults on some malformed files; running it in a child keeps
one bad file from taking the caller down. One long-lived child serves many
calls; if it dies, that call raises NcnnCrash and the next call starts a new one.
"""
from __future__ import annotations

import multiprocessing as mp
import time
import traceback
from pathlib import Path

import numpy as np

from converter.ncnn_side.child import ChildCrash, ChildError, configure_net, input_mat, run_with_python


class NcnnUnavailable(RuntimeError):
    pass


class NcnnCrash(RuntimeError):
    pass


class NcnnError(RuntimeError):
    pass


def available() -> bool:
    try:
        import ncnn  # noqa: F401
    except ImportError:
        return False
    return True


PRECISIONS = ("fp32", "fp16")      # fp16: as a device runs it by default (child.configure_net)


def _loaded_net(param: str, bin_: str, threads: int, precision: str):
    import ncnn
    net = ncnn.Net()
    configure_net(net, precision, threads)
    if net.load_param(param) != 0:
        raise NcnnError(f"ncnn could not load {param}")
    if net.load_model(bin_) != 0:
        raise NcnnError(f"ncnn could not load {bin_}")
    return ncnn, net


def _run_in_process(param: str, bin_: str, feeds: dict, outputs: list, threads: int,
                    precision: str = "fp32") -> dict:
    ncnn, net = _loaded_net(param, bin_, threads, precision)
    ex = net.create_extractor()
    for name, array in feeds.items():
        ex.input(name, input_mat(ncnn, array))
    result = {}
    for name in outputs:
        ret, mat = ex.extract(name)
        if ret != 0:
            raise NcnnError(f"ncnn failed to compute blob {name!r} (code {ret})")
        result[name] = np.array(mat).copy()
    return result


def _time_in_process(param: str, bin_: str, feeds: dict, outputs: list, threads: int,
                     warmup: int, loops: int) -> dict:
    """The net loaded once, then `warmup` untimed and `loops` timed extractions (ms each)."""
    ncnn, net = _loaded_net(param, bin_, threads, "fp32")
    mats = {name: input_mat(ncnn, array) for name, array in feeds.items()}     # converted once, untimed
    times = []
    for i in range(warmup + loops):
        start = time.perf_counter()
        ex = net.create_extractor()
        for name, mat in mats.items():
            ex.input(name, mat.clone())
        for name in outputs:
            if ex.extract(name)[0] != 0:
                raise NcnnError(f"ncnn failed to compute blob {name!r}")
        if i >= warmup:
            times.append((time.perf_counter() - start) * 1e3)
    return {"times": times}


def _serve(conn) -> None:
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        try:
            if request[0] == "time":
                conn.send(("ok", _time_in_process(*request[1:])))
                continue
            conn.send(("ok", _run_in_process(*request)))
        except Exception as exc:  # sent back to the caller, who re-raises it
            conn.send(("error", f"{exc}", traceback.format_exc()))


def _absolute(path) -> str:
    """The child outlives the caller's working folder (it started wherever the first run was): a
    relative path would be read against that folder."""
    return str(Path(path).resolve())


class NcnnRunner:
    """A child process that runs ncnn nets on request."""

    def __init__(self, threads: int = 2):
        if not available():
            raise NcnnUnavailable("the real ncnn runtime is not installed (pip install ncnn)")
        self.threads = threads
        self._proc = None
        self._conn = None

    def _start(self) -> None:
        ctx = mp.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child,), daemon=True)
        self._proc.start()
        child.close()

    def run(self, param: str | Path, bin_: str | Path, feeds: dict[str, np.ndarray],
            outputs: list[str], precision: str = "fp32", threads: int | None = None) -> dict[str, np.ndarray]:
        return self._request(param, (_absolute(param), _absolute(bin_), feeds, list(outputs),
                                     threads or self.threads, precision))

    def time(self, param, bin_, feeds: dict, outputs: list[str], threads: int, warmup: int,
             loops: int) -> list[float]:
        """Milliseconds of each timed run (fp32, as run() computes)."""
        request = ("time", _absolute(param), _absolute(bin_), feeds, list(outputs), threads, warmup, loops)
        return self._request(param, request)["times"]

    def _request(self, param, request: tuple) -> dict:
        if self._proc is None or not self._proc.is_alive():
            self._start()
        self._conn.send(request)
        try:
            reply = self._conn.recv()
        except EOFError:
            self._proc.join(5)
            code = self._proc.exitcode
            self._proc = None
            raise NcnnCrash(f"the ncnn runtime crashed (exit code {code}) running {param}") from None
        if reply[0] == "error":
            raise NcnnError(reply[1])
        return reply[1]

    def close(self) -> None:
        if self._proc is not None:
            self._conn.close()
            self._proc.join(5)
            if self._proc.is_alive():
                self._proc.kill()
            self._proc = None


_shared: NcnnRunner | None = None


def run_ncnn(param, bin_, feeds, outputs, precision: str = "fp32",
             threads: int | None = None, python: str | None = None) -> dict[str, np.ndarray]:
    """Run with a process-wide shared runner; precision 'fp16' runs as devices do by default;
    on `threads` threads (default: the runner's 2); `python`: in the ncnn that Python imports."""
    global _shared
    if python is not None:
        try:
            return run_with_python(python, param, bin_, feeds, outputs, precision, threads or 2)
        except ChildCrash as exc:
            raise NcnnCrash(str(exc)) from None
        except ChildError as exc:
            raise NcnnError(str(exc)) from None
    if _shared is None:
        _shared = NcnnRunner()
    return _shared.run(param, bin_, feeds, outputs, precision, threads)
