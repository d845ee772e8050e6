"""MobileNetV2 and ResNet-18 (torchvision's classes, seeded random weights) as ONNX at 224x224, into the
model cache for scripts/bench_int8.py; run with the tools venv (torch is never a package dependency):

    /work/zoo-venv/bin/python -m scripts.export_bench_cnns      # prints each file's path

Random weights time like trained ones (the same layers and shapes); BatchNorm statistics are set to
spread-out values so calibration sees realistic ranges rather than identity normalizations.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from scripts.fetch_models import cache_dir  # noqa: E402

NETS = {"mobilenet_v2_224": "mobilenet_v2", "resnet18_224": "resnet18"}


def path_of(name: str) -> Path:
    return cache_dir() / "bench" / f"{name}.onnx"


def export(name: str) -> Path:
    import torch
    import torchvision
    torch.manual_seed(0)
    net = getattr(torchvision.models, NETS[name])(weights=None).eval()
    for m in net.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 2.0)
    target = path_of(name)
    target.parent.mkdir(parents=True, exist_ok=True)
    staged = target.with_suffix(".part")
    torch.onnx.export(net, (torch.rand(1, 3, 224, 224),), str(staged), input_names=["x"], output_names=["logits"],
                      opset_version=17, dynamo=False)
    staged.replace(target)
    return target


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Export the benchmark CNNs into the model cache; print each path.")
    parser.add_argument("names", nargs="*", help=f"any of {', '.join(NETS)} (default: all)")
    for model in parser.parse_args().names or list(NETS):
        print(f"{model}\t{export(model)}")
