"""onnx's data-propagating shape inference, run where a native abort cannot end the process.

`infer_shapes(..., data_prop=True)` is C++ that some real models drive into a failed assertion
(madmom's onsets_cnn: SIGABRT, exit 134, no Python exception). It runs in a forked child; if
the child dies, plain inference (no data propagation) runs instead, again in a child, and if
that dies too the model is refused in one line. The child sends back the inferred model without
its initializers (inference does not change them), so only the new shape facts cross the pipe.

Forking costs time in proportion to the caller's memory (~50-150 ms for a process of 1 GB), paid
on every conversion: a process that converts many small models (the tests, `convert -j`, an
export script) would spend more on forks than on inference. So one forked child serves every
model up to SERVED_BYTES, sent to it serialized, until it dies (an abort: that model's request
fails as before, and the next request forks a new one); a larger model gets a child of its own,
which reads it from the forked memory instead of a copy through the pipe.
"""
from __future__ import annotations

import faulthandler
import os
import pickle
import select
import signal
import threading
from collections.abc import Callable

import onnx
from onnx import shape_inference

from converter.ir import ConversionError


def _infer(proto: onnx.ModelProto, data_prop: bool) -> onnx.ModelProto:
    return shape_inference.infer_shapes(proto, check_type=True, data_prop=data_prop)


def _quiet() -> None:
    """In a child: the failed assertion's C++ message would be a second line on the user's terminal."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
    faulthandler.disable()      # (it writes through a descriptor of its own)


def _answer(proto: onnx.ModelProto, data_prop: bool) -> tuple:
    """In a child: ("ok", the inferred model without its initializers) or ("error", the exception),
    which the parent raises as before."""
    try:
        inferred = _infer(proto, data_prop)
        del inferred.graph.initializer[:]
        return "ok", inferred.SerializeToString()
    except Exception as exc:       # an ordinary Python error
        return "error", exc


def _child(write_fd: int, proto: onnx.ModelProto, data_prop: bool) -> None:
    _quiet()
    reply = _answer(proto, data_prop)
    with os.fdopen(write_fd, "wb") as pipe:
        pickle.dump(reply, pipe)


def _died(pid: int) -> "ChildDied":
    _, status = os.waitpid(pid, 0)
    return ChildDied(signal_name(-os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)))


class ChildDied(Exception):
    pass


SERVED_BYTES = 64 << 20     # larger models are not copied through a pipe: a child of their own reads them


class _Server:
    """A forked child that infers each model it is sent, until the pipe closes or it dies."""

    def __init__(self):
        self.infer = _infer          # a child forked before `_infer` was replaced (tests) runs the old one
        self.owner = os.getpid()     # a process forked from the caller (a -j worker) forks its own
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            os.close(req_w)
            os.close(rep_r)
            try:
                _serve(req_r, rep_w)
            finally:
                os._exit(0)
        os.close(req_r)
        os.close(rep_w)
        self.requests, self.replies = os.fdopen(req_w, "wb"), os.fdopen(rep_r, "rb")

    def ask(self, proto: onnx.ModelProto, data_prop: bool) -> tuple:
        try:
            pickle.dump((proto.SerializeToString(), data_prop), self.requests)
            self.requests.flush()
            return pickle.load(self.replies)
        except (EOFError, BrokenPipeError, pickle.UnpicklingError):
            self.close()
            raise _died(self.pid) from None

    def close(self) -> None:
        for pipe in (self.requests, self.replies):
            try:
                pipe.close()
            except OSError:
                pass


def _serve(read_fd: int, write_fd: int) -> None:
    _quiet()
    parent = os.getppid()
    with os.fdopen(read_fd, "rb") as requests, os.fdopen(write_fd, "wb") as replies:
        while True:
            # children forked later hold the request pipe too: its end need not come with the caller's
            while not select.select([requests], [], [], 1.0)[0]:
                if os.getppid() != parent:
                    return
            try:
                data, data_prop = pickle.load(requests)
            except EOFError:
                return
            pickle.dump(_answer(onnx.ModelProto.FromString(data), data_prop), replies)
            replies.flush()


_SERVER: _Server | None = None
_SERVER_LOCK = threading.Lock()


def _served(proto: onnx.ModelProto, data_prop: bool) -> tuple:
    global _SERVER
    with _SERVER_LOCK:
        if _SERVER is not None and (_SERVER.infer is not _infer or _SERVER.owner != os.getpid()):
            _SERVER.close()
            if _SERVER.owner == os.getpid():     # ours: it leaves on the closed pipe; no zombie kept
                os.waitpid(_SERVER.pid, 0)
            _SERVER = None
        if _SERVER is None:
            _SERVER = _Server()
        try:
            return _SERVER.ask(proto, data_prop)
        except ChildDied:
            _SERVER = None
            raise


def _in_child(proto: onnx.ModelProto, data_prop: bool) -> onnx.ModelProto:
    """os.fork, not multiprocessing: a -j worker is a daemonic process, which may not have children."""
    if proto.ByteSize() <= SERVED_BYTES:
        return _reply(proto, *_served(proto, data_prop))
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        try:
            _child(write_fd, proto, data_prop)
        finally:
            os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        data = pipe.read()
    if not data:
        raise _died(pid)
    os.waitpid(pid, 0)
    return _reply(proto, *pickle.loads(data))


def _reply(proto: onnx.ModelProto, kind: str, payload) -> onnx.ModelProto:
    if kind == "error":
        raise payload
    inferred = onnx.ModelProto.FromString(payload)
    inferred.graph.initializer.extend(proto.graph.initializer)
    return inferred


def signal_name(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            return signal.Signals(-exitcode).name
        except ValueError:
            return f"signal {-exitcode}"
    return f"exit code {exitcode}"


def _input_shapes(proto: onnx.ModelProto) -> str:
    initializers = {t.name for t in proto.graph.initializer}
    def dims(vi) -> str:
        return ",".join(str(d.dim_value) if d.HasField("dim_value") else "?" for d in vi.type.tensor_type.shape.dim)
    return ", ".join(f"{vi.name}=[{dims(vi)}]" for vi in proto.graph.input if vi.name not in initializers)


def infer_shapes_isolated(warnings: list[str] | None = None) -> Callable[[onnx.ModelProto], onnx.ModelProto]:
    """A shape-inference function for `prepare_model`: data propagation in a child, plain
    inference if that child dies (with a warning in `warnings`)."""
    if not hasattr(os, "fork"):
        return lambda proto: _infer(proto, True)     # no cheap child here: as before

    def infer(proto: onnx.ModelProto) -> onnx.ModelProto:
        try:
            return _in_child(proto, True)
        except ChildDied as died:
            first = str(died)
        if warnings is not None:
            warnings.append(f"onnx's shape inference with data propagation crashed ({first}) on this model; "
                            f"plain shape inference was used (sizes computed from shapes may stay unknown: "
                            f"--input-shape fixes them)")
        try:
            return _in_child(proto, False)
        except ChildDied as died:
            raise ConversionError(f"onnx's shape inference crashed ({first}, then {died} without data "
                                  f"propagation) at input shapes {_input_shapes(proto)} (a dynamic leading "
                                  f"dim is taken as a batch of 1): give the sizes the model runs at with "
                                  f"--input-shape NAME=DIMS") from None
    return infer
