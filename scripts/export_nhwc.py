"""Export models/layouts/nhwc_classifier.onnx: a small image classifier that takes NHWC pixels, as
TF/keras exports (tf2onnx) do: the graph opens with x / 255 and x - mean (per channel, on the last
axis), then one Transpose(perm 0,3,1,2) that two Convs read. The test model of convert --nchw-input
(tests/cli/test_nchw_input.py); torch is a tool of this script, not of the tests.

    /work/zoo-venv/bin/python scripts/export_nhwc.py
"""
from pathlib import Path

import torch

OUT = Path(__file__).resolve().parent.parent / "models" / "layouts" / "nhwc_classifier.onnx"


class NhwcClassifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.b = torch.nn.Conv2d(3, 8, 1)
        self.head = torch.nn.Linear(8, 5)
        self.register_buffer("mean", torch.tensor([0.485, 0.456, 0.406]))

    def forward(self, x):                 # x: [N, H, W, 3], pixels 0..255
        x = x / 255.0 - self.mean         # per channel: the mean broadcasts on the last axis
        x = x.permute(0, 3, 1, 2)         # read by both branches
        y = torch.relu(self.a(x)) + self.b(x)
        return self.head(y.mean(dim=(2, 3)))


def main() -> None:
    torch.manual_seed(0)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    torch.onnx.export(NhwcClassifier().eval(), (torch.rand(1, 24, 32, 3) * 255,), str(OUT), input_names=["image"],
                      output_names=["logits"], opset_version=17, dynamo=False,
                      dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}})
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
