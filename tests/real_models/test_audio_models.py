"""Audio front ends from more packages, in real ncnn and the interpreter against onnxruntime:
faster-whisper's silero VAD v6 (separate h/c LSTM states, opset 18) over consecutive calls with
each backend fed back its own states; openWakeWord's mel spectrogram, embedding and wake-word
classifiers."""
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from converter import convert
from converter.ir import ConversionError
from scripts.fetch_models import fetch

from .real_check import check_real_model, converted_run, within_tolerance

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
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    want = _calls(lambda feeds: dict(zip(names, session.run(names, feeds))))
    failures = []
    for kind in ("ncnn", "interpreter"):
        for call, (ours, reference) in enumerate(zip(_calls(converted_run(converted, param, bin_, kind)), want)):
            for key, value in reference.items():
                ok, detail = within_tolerance(ours[key], value)
                if not ok:
                    failures.append(f"call {call}: {kind} {key}: {detail}")
    assert not failures, "\n".join(failures)


def test_openwakeword_melspectrogram_two_lengths_from_one_file(tmp_path):
    """STFT as Conv, power to dB, and a floor at max - 80 dB: a Clip whose bound is computed at run
    time (BinaryOp max). Fed int16-scale audio, as openWakeWord does."""
    check_real_model("oww_melspectrogram", [{"input": [1, 1280]}, {"input": [1, 1760]}], tmp_path,
                     value_range=(-3000.0, 3000.0))


def test_openwakeword_embedding(tmp_path):
    check_real_model("oww_embedding_model", [{"input_1": [1, 76, 32, 1]}], tmp_path, value_range=(-2.0, 2.0))


def test_openwakeword_classifier(tmp_path):
    check_real_model("oww_alexa_v0.1", [{}], tmp_path, value_range=(-2.0, 2.0))


def test_openwakeword_verifier_if_on_a_score_selects_a_branch(tmp_path):
    """hey_jarvis runs a verifier only when its first score is >= 0.5: an If on a run-time value,
    converted as both branches and a Where. Seed 0 stays below the threshold, seed 2 goes above
    (onnxruntime's first score says so); both outcomes agree with onnxruntime."""
    path = fetch("oww_hey_jarvis_v0.1")
    model = onnx.load(str(path))
    model.graph.output.append(onnx.helper.make_tensor_value_info("p1.1", onnx.TensorProto.FLOAT, None))
    first_score = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    inputs = {seed: np.random.default_rng(seed).standard_normal((1, 16, 96)).astype(np.float32) for seed in (0, 2)}
    scores = {seed: float(first_score.run(["p1.1"], {"x.1": x})[0].reshape(-1)[0]) for seed, x in inputs.items()}
    assert scores[0] < 0.5 <= scores[2]
    converted = convert(path)
    assert "Where" not in [n.op for n in converted.graph.nodes.values()]      # lowered to BinaryOps
    check_real_model("oww_hey_jarvis_v0.1", [{}, {}], tmp_path,
                     make_feeds=lambda shapes, k: {"x.1": inputs[(0, 2)[k]]})


def _front_end_outputs(converted, path, waveform, lens, outputs, tmp) -> list[str]:
    """Failures of `outputs` in real ncnn and the interpreter against onnxruntime for one waveform."""
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feeds = {"waveforms": waveform, "waveforms_lens": np.array([lens], np.int64)}
    want = dict(zip(outputs, session.run(outputs, feeds)))
    param, bin_ = Path(tmp) / "m.param", Path(tmp) / "m.bin"
    converted.save(param, bin_)
    failures = []
    for backend in ("ncnn", "interpreter"):
        got = converted_run(converted, param, bin_, backend)({k: v for k, v in feeds.items()
                                                              if k in [e["onnx"] for e in converted.io()["inputs"]]})
        for name in outputs:
            ok, detail = within_tolerance(got[name], want[name])
            if not ok:
                failures.append(f"{len(waveform[0])} samples, lens {lens}: {backend} {name}: {detail}")
    return failures


@pytest.mark.parametrize("name,outputs", [("asr_nemo80_conv", ["features", "features_lens"]),
                                          ("asr_gigaam_v2_conv", ["features", "features_lens"]),
                                          ("asr_nemo80", ["features", "features_lens"]),
                                          ("asr_gigaam_v2", ["features", "features_lens"]),
                                          ("asr_gigaam_v3", ["features", "features_lens"]),
                                          ("asr_resample_16_8", ["resampled", "resampled_lens"])])
def test_onnx_asr_front_ends_one_file_for_every_length(tmp_path, name, outputs):
    """onnx-asr's feature extractors (STFT as ncnn Spectrogram, or as a Conv in the _conv exports; mel
    MatMul, log, per-feature normalization, length masks: Range over the run-time length < lens,
    Where) and a resampler (Slice to a run-time end).
    The lengths input is integer math at run time; a lens shorter than the waveform masks the tail."""
    path = fetch(name)
    converted = convert(path)
    failures = []
    for samples, lens in ((16000, 16000), (12345, 12345), (16000, 9000)):
        waveform = (np.random.default_rng(samples + lens).standard_normal((1, samples)) * 0.1).astype(np.float32)
        failures += _front_end_outputs(converted, path, waveform, lens, outputs, tmp_path)
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("name", ["asr_whisper80_conv", "asr_whisper80"])
def test_onnx_asr_whisper_front_end_at_a_fixed_length(tmp_path, name):
    """Whisper pads every clip to 30 s: its Pad amounts are computed from the length, which ncnn's
    Padding cannot take at run time, so the length is fixed (and its lens with it)."""
    path = fetch(name)
    samples = 16000
    converted = convert(path, input_shapes={"waveforms": [1, samples]}, input_values={"waveforms_lens": [samples]})
    waveform = (np.random.default_rng(3).standard_normal((1, samples)) * 0.1).astype(np.float32)
    failures = _front_end_outputs(converted, path, waveform, samples, ["features"], tmp_path)
    assert not failures, "\n".join(failures)


def test_window_rounded_to_float16_becomes_a_dft_convolution():
    """GigaAM v3 stores its Hann window in float16, 2e-3 away from any window ncnn's Spectrogram
    builds: its STFT runs as a Convolution1D over the windowed DFT basis instead (values above)."""
    types = [n.op for n in convert(fetch("asr_gigaam_v3")).graph.topological()]
    assert "Convolution1D" in types and "Spectrogram" not in types
