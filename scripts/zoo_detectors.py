"""End-to-end detectors as users export them, at tiny widths with random weights, for the host tail
(issue 26): ultralytics YOLO26n and YOLOv10n (NMS-free heads ending in TopK/Gather) through
ultralytics' own exporter, and torchvision's SSDlite320 with its post-processing (score threshold,
NonZero, TopK, batched NMS) in the graph.

    /work/zoo-venv/bin/python -m scripts.zoo_detectors [--out models/detectors] [NAME ...]

Ultralytics builds from its yaml configs (scales shrunk), never downloads: its settings are pointed at a
scratch folder and the network is blocked for the run. Random heads score every anchor alike (TopK then
orders ties, and any rounding reorders them), so the class and box heads' last layers are rescaled until
scores spread over (0, 1); the image fed (`detector_image`, a drawn scene of shapes) gives scores above
the detectors' thresholds. Writes <name>.onnx, scene.npy (the image as uint8; the models take it / 255) and a manifest.json."""
from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch
from torch import nn

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from scripts.export_zoo import calibrate_batchnorm, randomize  # noqa: E402

SIZE = 160
GAINS = {"yolo26n_e2e": float(os.environ.get("GAIN26", 0.3)), "yolov10n_e2e": float(os.environ.get("GAIN10", 3.0))}


def detector_image(size: int = SIZE, seed: int = 0) -> np.ndarray:
    """A scene of filled rectangles and discs on a gradient, (1, 3, size, size) in [0, 1]."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:size, 0:size] / size
    img = np.stack([0.3 + 0.4 * x, 0.2 + 0.5 * y, 0.5 - 0.3 * x * y])
    for _ in range(6):
        color = rng.uniform(0, 1, 3)[:, None, None]
        cx, cy, r = rng.uniform(0.15, 0.85, 2).tolist() + [rng.uniform(0.06, 0.2)]
        if rng.random() < 0.5:
            inside = (np.abs(x - cx) < r) & (np.abs(y - cy) < r * 0.7)
        else:
            inside = (x - cx) ** 2 + (y - cy) ** 2 < r * r
        img = np.where(inside[None], color, img)
    return (np.round(img[None] * 255) / 255).astype(np.float32)       # as a decoded 8-bit image


def _block_network():
    def refuse(*args, **kwargs):
        raise OSError("network blocked by zoo_detectors (no downloads)")
    socket.socket.connect = refuse
    socket.create_connection = refuse


def _ultralytics_settings(scratch: Path) -> None:
    os.environ["YOLO_OFFLINE"] = "1"
    os.environ["YOLO_CONFIG_DIR"] = str(scratch)
    from ultralytics.utils import SETTINGS
    SETTINGS.update({"sync": False, "weights_dir": str(scratch / "weights"), "datasets_dir": str(scratch / "data"),
                     "runs_dir": str(scratch / "runs")})


def _spread_scores(convs: list[nn.Conv2d], gain: float) -> None:
    with torch.no_grad():
        for conv in convs:
            conv.weight.mul_(gain)
            if conv.bias is not None:
                conv.bias.copy_(torch.linspace(-3.0, 1.0, conv.bias.numel()))


def ultralytics_model(config: str, scale: list, scratch: Path, seed: int, gain: float):
    import yaml
    from ultralytics import YOLO
    from ultralytics.cfg import get_cfg  # noqa: F401  (imports the settings first)
    source = Path(__import__("ultralytics").__file__).parent / "cfg" / "models" / config
    cfg = yaml.safe_load(source.read_text())
    cfg["nc"] = 2            # few scores: fewer near-ties for TopK to order by rounding
    cfg["scales"] = {"n": scale}
    path = scratch / (source.stem.rstrip("n") + "n.yaml")     # the scale letter is read from the name
    path.write_text(yaml.safe_dump(cfg))
    yolo = YOLO(str(path), task="detect")
    net = yolo.model
    randomize(net, seed)
    rng = np.random.default_rng(seed)
    calibrate_batchnorm(net, lambda r: [torch.from_numpy(detector_image(SIZE, int(r.integers(1 << 30))))], rng)
    head = net.model[-1]
    for branch in [b for b in (getattr(head, "cv3", None), getattr(head, "one2one_cv3", None)) if b is not None]:
        _spread_scores([seq[-1] for seq in branch], gain)
    return yolo


def export_ultralytics(name: str, config: str, scale: list, out: Path, scratch: Path, seed: int,
                       gain: float) -> Path:
    yolo = ultralytics_model(config, scale, scratch, seed, gain)
    # nms=False: the NMS-free end-to-end head (TopK, Mod, Gather), as YOLO26's docs export it
    here = os.getcwd()
    os.chdir(scratch)           # ultralytics writes the .onnx beside the yaml it was built from, or here
    try:
        exported = Path(yolo.export(format="onnx", imgsz=SIZE, simplify=False, dynamic=False, opset=17,
                                    nms=False)).resolve()
    finally:
        os.chdir(here)
    target = out / f"{name}.onnx"
    target.write_bytes(exported.read_bytes())
    return target


class TinyBackbone(nn.Module):
    """Two feature maps (stride 8 and 16, 16 and 24 channels): SSDlite's head and post-processing over
    them at a few kB (torchvision's MobileNetV3 extras are ~2.6 MB whatever the width)."""

    def __init__(self):
        super().__init__()
        def block(cin, cout):
            return nn.Sequential(nn.Conv2d(cin, cout, 3, 2, 1), nn.BatchNorm2d(cout), nn.ReLU6())
        self.c8 = nn.Sequential(block(3, 8), block(8, 16), block(16, 16))
        self.c16 = block(16, 24)

    def forward(self, x):
        f8 = self.c8(x)
        return {"0": f8, "1": self.c16(f8)}


def export_ssdlite(out: Path, seed: int) -> Path:
    """torchvision's SSD with its SSDlite head, anchors and post-processing (score threshold, per-class
    TopK, batched NMS) over a tiny backbone, exported as its docs show (list of images in, dicts out)."""
    from functools import partial

    from torchvision.models.detection.anchor_utils import DefaultBoxGenerator
    from torchvision.models.detection.ssd import SSD
    from torchvision.models.detection.ssdlite import SSDLiteHead
    anchors = DefaultBoxGenerator([[2, 3], [2, 3]], min_ratio=0.2, max_ratio=0.9)
    head = SSDLiteHead([16, 24], anchors.num_anchors_per_location(), 4, partial(nn.BatchNorm2d, eps=0.001))
    net = SSD(TinyBackbone(), anchors, (SIZE, SIZE), 4, head=head, score_thresh=0.3, detections_per_img=20,
              topk_candidates=50, image_mean=[0.5] * 3, image_std=[0.5] * 3)
    randomize(net, seed)
    rng = np.random.default_rng(seed)
    calibrate_batchnorm(net.backbone, lambda r: [torch.from_numpy(detector_image(SIZE, int(r.integers(1 << 30))))],
                        rng)
    _spread_scores([m for m in net.head.classification_head.modules() if isinstance(m, nn.Conv2d)][-2:], 2.0)
    net.eval()

    class Images(nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, image):
            det = self.inner(list(image))[0]
            return det["boxes"], det["scores"], det["labels"]

    target = out / "ssdlite_tiny.onnx"
    torch.onnx.export(Images(net), (torch.from_numpy(detector_image()),), str(target), dynamo=False,
                      opset_version=17, input_names=["image"], output_names=["boxes", "scores", "labels"])
    return target


def describe(path: Path, image: np.ndarray) -> dict:
    model = onnx.load(str(path))
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feed = {session.get_inputs()[0].name: image}
    outputs = session.run(None, feed)
    ops: dict[str, int] = {}
    for node in model.graph.node:
        ops[node.op_type] = ops.get(node.op_type, 0) + 1
    return {"input": session.get_inputs()[0].name, "image": "scene.npy", "bytes": path.stat().st_size,
            "outputs": {o.name: list(v.shape) for o, v in zip(session.get_outputs(), outputs)}, "ops": ops,
            "top_scores": [round(float(v), 4) for v in np.sort(np.ravel(_scores(outputs)))[::-1][:5]],
            "closest_scores": _closest(_scores(outputs))}


def _closest(scores) -> float:
    """The smallest relative gap between two kept scores: rounding must not reorder them."""
    s = np.sort(np.ravel(scores).astype(np.float64))
    s = s[s > 1e-3]
    return float(np.min(np.diff(s) / s[1:], initial=1.0)) if s.size > 1 else 1.0


def _scores(outputs):
    first = outputs[0]
    return first[..., 4] if first.ndim == 3 and first.shape[-1] == 6 else outputs[1]


BUILDERS = {
    "yolo26n_e2e": lambda out, scratch: export_ultralytics("yolo26n_e2e", "26/yolo26.yaml", [0.33, 0.125, 128],
                                                           out, scratch, 1, GAINS["yolo26n_e2e"]),
    "yolov10n_e2e": lambda out, scratch: export_ultralytics("yolov10n_e2e", "v10/yolov10n.yaml",
                                                            [0.33, 0.125, 128], out, scratch, 2,
                                                            GAINS["yolov10n_e2e"]),
    "ssdlite_tiny": lambda out, scratch: export_ssdlite(out, 3),
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "models" / "detectors"))
    parser.add_argument("names", nargs="*", default=list(BUILDERS))
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    with tempfile.TemporaryDirectory() as scratch:
        _ultralytics_settings(Path(scratch))
        _block_network()
        torch.manual_seed(0)
        for name in args.names:
            path = BUILDERS[name](out, Path(scratch))
            image = detector_image()
            np.save(out / "scene.npy", np.round(image * 255).astype(np.uint8))      # the tests' input / 255
            manifest[name] = describe(path, image)
            print(name, json.dumps(manifest[name]))
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
