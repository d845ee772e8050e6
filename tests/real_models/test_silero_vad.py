"""silero-vad 6.2.3's models (scripts/fetch_models.py) over consecutive calls, each backend fed
back its own state outputs, against onnxruntime: real ncnn and the interpreter.

The models branch (If) on the sample rate input `sr`: `input_values={"sr": ...}` makes it a
constant, so only the branch for that rate is converted. Each chunk carries silero's context
(64 samples at 16 kHz, 32 at 8 kHz) as its wrapper feeds it.

They exercise LSTM with state bottoms/tops (or, in the op18 "ifless" export, an LSTM cell written
out as Gemm/Split/Sigmoid/Tanh/Mul/Add), If inlining, --input-value, reflect Pad, Cast and
Gather of one index.
"""
import numpy as np
import onnx
import onnxruntime as ort
import pytest

from converter import convert
from scripts.fetch_models import fetch

from .real_check import converted_run, within_tolerance


CALLS = 4
STATE = np.zeros((2, 1, 128), np.float32)
# name, sample rate fixed at conversion (None: the model has no sr input), samples per call
CASES = [("silero_vad", 16000, 576), ("silero_vad", 8000, 288), ("silero_vad_16k_op15", 16000, 576),
         ("silero_vad_half", None, 576), ("silero_vad_openvino_16k", None, 576),
         ("silero_vad_op18_ifless", 16000, 576), ("silero_vad_op18_ifless", 8000, 288)]
# exports whose LSTM cell is written out as Gemm, Split, Sigmoid, Tanh, Mul and Add
GEMM_BUILT_CELL = {"silero_vad_op18_ifless"}


def run_calls(path, sr, samples, run):
    """`run(feeds) -> outputs` for CALLS chunks of noise, feeding the state output back."""
    rng = np.random.default_rng(samples)
    state, results = STATE, []
    for _ in range(CALLS):
        audio = (rng.standard_normal((1, samples)) * 0.3).astype(np.float32)
        outputs = run({"input": audio, "state": state})
        results.append(outputs)
        state = outputs["stateN"].reshape(STATE.shape).copy()
    return results


def onnxruntime_run(path, sr):
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    extra = {} if sr is None else {"sr": np.array(sr, np.int64)}
    return lambda feeds: dict(zip(names, session.run(names, {**feeds, **extra})))


@pytest.mark.parametrize("name,sr,samples", CASES, ids=[f"{n}-{r}" for n, r, _ in CASES])
def test_silero_vad_stateful_calls(tmp_path, name, sr, samples):
    path = fetch(name)
    converted = convert(path, input_shapes={"input": [1, samples], "state": list(STATE.shape)},
                        input_values={} if sr is None else {"sr": sr})
    assert ("LSTM" in [n.op for n in converted.graph.nodes.values()]) == (name not in GEMM_BUILT_CELL)
    param, bin_ = tmp_path / "m.param", tmp_path / "m.bin"
    converted.save(param, bin_)
    want = run_calls(path, sr, samples, onnxruntime_run(path, sr))
    failures = []
    for backend in ("ncnn", "interpreter"):
        got = run_calls(path, sr, samples, converted_run(converted, param, bin_, backend))
        for call, (ours, reference) in enumerate(zip(got, want)):
            for key, value in reference.items():
                ok, detail = within_tolerance(ours[key], value)
                if not ok:
                    failures.append(f"{name} call {call}: {backend} {key}: {detail}")
    assert not failures, "\n".join(failures)


def test_silero_vad_without_sr_names_the_fix():
    """Without a fixed rate the If on `sr` is refused, naming the input and the option."""
    from converter.ir import ConversionError
    with pytest.raises(ConversionError, match="--input-value sr=VALUE"):
        convert(fetch("silero_vad"), input_shapes={"input": [1, 576], "state": [2, 1, 128]})


def test_silero_vad_sequence_lstm_states_are_graph_io():
    """The sequence export takes h and c as inputs and returns hn, cn: they become the ncnn LSTM's
    extra bottoms and tops."""
    path = fetch("silero_vad_16k_sequence")
    model = onnx.load(str(path))
    assert [i.name for i in model.graph.input] == ["input", "h", "c"]
    converted = convert(path, input_shapes={"input": [1, 576]})
    lstm = next(n for n in converted.graph.nodes.values() if n.op == "LSTM")
    assert len(lstm.inputs) == 3 and len(lstm.outputs) == 3


def test_silero_vad_sequence_one_file_at_several_lengths(tmp_path):
    """The sequence export runs its STFT and encoder (1-D Convs) on every chunk of a [chunks, 576]
    input: left dynamic, the chunks become the height of 2-D Convs, so one .param runs every
    length. Consecutive calls of 1, 3 and 2 chunks, each backend fed back its own hn and cn."""
    path = fetch("silero_vad_16k_sequence")
    converted = convert(path, input_shapes={"input": [None, 576]})
    param, bin_ = tmp_path / "m.param", tmp_path / "m.bin"
    converted.save(param, bin_)
    reference = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    backends = {"onnxruntime": lambda feeds: dict(zip(["speech_probs", "hn", "cn"], reference.run(None, feeds))),
                "ncnn": converted_run(converted, param, bin_, "ncnn"),
                "interpreter": converted_run(converted, param, bin_, "interpreter")}
    rng = np.random.default_rng(0)
    chunks = [(rng.standard_normal((n, 576)) * 0.3).astype(np.float32) for n in (1, 3, 2)]
    results = {}
    for backend, run in backends.items():
        h = c = np.zeros((1, 1, 128), np.float32)
        results[backend] = []
        for audio in chunks:
            outputs = run({"input": audio, "h": h, "c": c})
            results[backend].append(outputs)
            h, c = (outputs[k].reshape(1, 1, 128).copy() for k in ("hn", "cn"))
    failures = [f"call {call} ({len(chunks[call])} chunks): {backend} {key}: {detail}"
                for backend in ("ncnn", "interpreter")
                for call, (ours, want) in enumerate(zip(results[backend], results["onnxruntime"]))
                for key, value in want.items()
                for ok, detail in [within_tolerance(ours[key], value)] if not ok]
    assert not failures, "\n".join(failures)
