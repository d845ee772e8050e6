"""Audio front ends from more packages: faster-whisper's silero VAD v6 (separate h/c LSTM states,
opset 18), over consecutive calls with each backend fed back its own states, against onnxruntime."""
import numpy as np
import onnxruntime as ort

from converter import convert
from converter.ncnn_runtime import run_ncnn
from onnx_cases import to_ncnn
from scripts.fetch_models import fetch

from .real_check import within_tolerance

CALLS, SAMPLES = 4, 576


def _calls(run) -> list[dict]:
    rng = np.random.default_rng(7)
    h = c = np.zeros((1, 1, 128), np.float32)
    results = []
    for _ in range(CALLS):
        audio = (rng.standard_normal((1, SAMPLES)) * 0.3).astype(np.float32)
        out = run({"input": audio, "h": h, "c": c})
        results.append(out)
        h, c = out["hn"].reshape(1, 1, 128).copy(), out["cn"].reshape(1, 1, 128).copy()
    return results


def test_faster_whisper_silero_v6_stateful_calls(tmp_path):
    path = fetch("silero_vad_v6_whisper")
    converted = convert(path, input_shapes={"input": [1, SAMPLES]})
    param, bin_ = tmp_path / "m.param", tmp_path / "m.bin"
    converted.save(param, bin_)
    io = converted.io()
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    want = _calls(lambda feeds: dict(zip(names, session.run(names, feeds))))

    def backend(kind):
        def run(feeds):
            ncnn_feeds = {e["ncnn"]: to_ncnn(feeds[e["onnx"]], e) for e in io["inputs"]}
            outs = [e["ncnn"] for e in io["outputs"]]
            got = run_ncnn(param, bin_, ncnn_feeds, outs) if kind == "ncnn" else converted.run(ncnn_feeds)
            return {e["onnx"]: np.array(got[e["ncnn"]]) for e in io["outputs"]}
        return run

    failures = []
    for kind in ("ncnn", "interpreter"):
        for call, (ours, reference) in enumerate(zip(_calls(backend(kind)), want)):
            for key, value in reference.items():
                ok, detail = within_tolerance(ours[key], value)
                if not ok:
                    failures.append(f"call {call}: {kind} {key}: {detail}")
    assert not failures, "\n".join(failures)
