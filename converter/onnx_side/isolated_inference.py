"""onnx's data-propagating shape inference, run where a native abort cannot end the process.

`infer_shapes(..., data_prop=True)` is C++ that some real models drive into a failed assertion
(madmom's onsets_cnn: SIGABRT, exit 134, no Python exception). It runs in a forked child; if
the child dies, plain inference (no data propagation) runs instead, again in a child, and if
that dies too the model is refused in one line. The child sends back the inferred model without
its initializers (inference does not change them), so only the new shape facts cross the pipe.
"""
from __future__ import annotations

import faulthandler
import os
import pickle
import signal
from collections.abc import Callable

import onnx
from onnx import shape_inference

from converter.ir import ConversionError


def _infer(proto: onnx.ModelProto, data_prop: bool) -> onnx.ModelProto:
    return shape_inference.infer_shapes(proto, check_type=True, data_prop=data_prop)


def _child(write_fd: int, proto: onnx.ModelProto, data_prop: bool) -> None:
    # the failed assertion's C++ message would be a second line on the user's terminal
    os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
    faulthandler.disable()      # (it writes through a descriptor of its own)
    try:
        inferred = _infer(proto, data_prop)
        del inferred.graph.initializer[:]
        reply = ("ok", inferred.SerializeToString())
    except Exception as exc:       # an ordinary Python error: the parent raises it as before
        reply = ("error", exc)
    with os.fdopen(write_fd, "wb") as pipe:
        pickle.dump(reply, pipe)


class ChildDied(Exception):
    pass


def _in_child(proto: onnx.ModelProto, data_prop: bool) -> onnx.ModelProto:
    """os.fork, not multiprocessing: a -j worker is a daemonic process, which may not have children."""
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
    _, status = os.waitpid(pid, 0)
    if not data:
        raise ChildDied(signal_name(-os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)))
    kind, payload = pickle.loads(data)
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
