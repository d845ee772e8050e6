"""The host tail: the part of a model ncnn has no layers for (TopK, NonMaxSuppression, NonZero, an If on
data, ...), kept as `<stem>_tail.onnx` and run by onnxruntime on what the ncnn files compute.

The conversion's record (`.json`) says which file, which tensors it reads (ncnn's outputs, or the model's
own inputs) and which model outputs it gives, so the Python API, the generated script and verify run
ncnn then the tail and hand back the whole model's outputs."""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx

from converter.ir import ConversionError
from converter.onnx_side.cut import Cut


def tail_path(param_path: str | Path) -> Path:
    """`out/m.ncnn.param` -> `out/m_tail.onnx`."""
    param_path = Path(param_path)
    return param_path.parent / (param_path.name.removesuffix(".param").removesuffix(".ncnn") + "_tail.onnx")


@dataclass
class HostTail:
    model: onnx.ModelProto      # the tail as an ONNX model of its own
    inputs: list[str]           # what it reads: ncnn outputs and the model's inputs (ONNX names)
    outputs: list[str]          # the whole model's outputs in order, each from the tail or from ncnn
    refused: list[str]          # the nodes ncnn refused, which start the tail
    file: str | None = None     # its file name beside the .param, once saved or loaded

    @classmethod
    def of(cls, cut: Cut, tail_model: onnx.ModelProto, outputs: list[str]) -> "HostTail":
        return cls(tail_model, cut.tail_inputs, outputs, cut.refused)

    def record(self, file: str) -> dict:
        return {"file": file, "inputs": self.inputs, "outputs": self.outputs, "refused": self.refused,
                "computes": [o.name for o in self.model.graph.output]}

    @classmethod
    def load(cls, folder: Path, record: dict) -> "HostTail":
        path = folder / record["file"]
        try:
            model = onnx.load(str(path))
        except Exception as exc:
            raise ConversionError(f"cannot read the host tail {path}: {exc}") from None
        return cls(model, record["inputs"], record["outputs"], record.get("refused", []), record["file"])

    def session(self):
        if getattr(self, "_session", None) is None:
            import onnxruntime
            self._session = onnxruntime.InferenceSession(self.model.SerializeToString(),
                                                         providers=["CPUExecutionProvider"])
        return self._session

    def run(self, feeds: dict[str, np.ndarray], head: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The whole model's outputs from the model's inputs `feeds` and ncnn's outputs `head` (ONNX
        names and layout): the tail's inputs cast to the dtypes it declares (ncnn computes floats)."""
        session = self.session()
        known = {**feeds, **head}
        missing = [i.name for i in session.get_inputs() if i.name not in known]
        if missing:
            raise KeyError(f"the host tail needs {', '.join(missing)}, which neither the inputs nor ncnn gave")
        tail_feeds = {i.name: np.asarray(known[i.name], _numpy_type(i.type)) for i in session.get_inputs()}
        names = [o.name for o in session.get_outputs()]
        computed = dict(zip(names, session.run(names, tail_feeds)))
        return {name: computed[name] if name in computed else head[name] for name in self.outputs}


def _numpy_type(ort_type: str) -> np.dtype:
    """onnxruntime's 'tensor(float)' -> float32."""
    kind = ort_type.removeprefix("tensor(").removesuffix(")")
    return np.dtype({"float": "float32", "double": "float64", "float16": "float16", "bool": "bool"}.get(kind, kind))


def rows_in_other_order(got, want, atol, rtol):
    """How many rows of `got` (along its first axis longer than 1) stand where `want` has another row,
    each matched one to one with a row of `want` within atol + rtol |want|; None if some has no match.
    A tail's TopK orders near-equal scores by their last bits, which ncnn's rounding moves: the same
    detections, in another order. (Self-contained: the generated script carries its source.)"""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    long = [a for a, n in enumerate(want.shape) if n > 1]
    if got.shape != want.shape or not long:
        return None
    got, want = (np.moveaxis(a, long[0], 0).reshape(want.shape[long[0]], -1) for a in (got, want))
    bound = atol + rtol * np.abs(want)
    moved = [i for i in range(len(want)) if not np.all(np.abs(got[i] - want[i]) <= bound[i])]
    free = set(moved)
    for i in moved:
        match = next((j for j in sorted(free) if np.all(np.abs(got[i] - want[j]) <= bound[j])), None)
        if match is None:
            return None
        free.discard(match)
    return len(moved)


SCRIPT_RUN_TAIL = """

def run_tail(feeds, outputs):
    \"\"\"The host tail (TAIL["file"], onnxruntime) on ncnn's outputs and the inputs: the model's outputs.\"\"\"
    global _TAIL_SESSION
    import onnxruntime
    if _TAIL_SESSION is None:
        _TAIL_SESSION = onnxruntime.InferenceSession(str(HERE / TAIL["file"]), providers=["CPUExecutionProvider"])
    known = {**feeds, **outputs}
    types = {"float": "float32", "double": "float64", "bool": "bool"}
    tail_feeds = {i.name: np.asarray(known[i.name], types.get(i.type[7:-1], i.type[7:-1]))
                  for i in _TAIL_SESSION.get_inputs()}
    names = [o.name for o in _TAIL_SESSION.get_outputs()]
    computed = dict(zip(names, _TAIL_SESSION.run(names, tail_feeds)))
    return {name: computed[name] if name in computed else outputs[name] for name in TAIL["outputs"]}


_TAIL_SESSION = None
"""


def script_block(tail: "HostTail | None", file: str) -> str:
    """The generated script's part for the host tail: TAIL (its record), run_tail, and the row
    matcher --check uses; `TAIL = None` without a tail."""
    if tail is None:
        return "TAIL = None\n"
    record = tail.record(file)
    return (f"# the host tail: what ncnn has no layers for, run by onnxruntime after ncnn\n"
            f"TAIL = {record!r}\n" + SCRIPT_RUN_TAIL + "\n\n" + inspect.getsource(rows_in_other_order))
