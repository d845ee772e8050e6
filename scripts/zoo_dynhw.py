"""Builders of the export zoo's dynamic-size round (scripts/export_zoo.py registers them): CNN,
segmentation and detection nets exported with the batch, height and width dynamic, so one converted
file must serve every input size. What their heads compute from run-time sizes: resizes to another
tensor's size (torchvision's FCN / DeepLabV3 / LR-ASPP heads and FPN, a U-Net's skip joins), resizes
by a scale (a YOLO-style neck), pads and transposed convs sized by the input (a classic U-Net),
global pooling and flatten (classifiers). Narrow widths keep each file small."""
from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from scripts.zoo_specs import image

CLASSES = 10
HW = {"x": {0: "batch", 2: "height", 3: "width"}}
# sizes other than the export's 64x64 (multiples of 32: every net here downsamples by up to 32)
SIZES = [{"height": 64, "width": 96}, {"height": 96, "width": 64}]
# 46x52 halves to odd extents: resizes to a skip's size that are not twice their input, negative pads
ODD_SIZES = [*SIZES, {"height": 46, "width": 52}]


def img():
    return [image("x", (1, 3, 64, 64))]


def cna(cin, cout, stride=1):
    from torchvision.ops import Conv2dNormActivation
    return Conv2dNormActivation(cin, cout, stride=stride)


class Backbone(nn.Module):
    """Three levels at strides 4, 8, 16; returns torchvision's IntermediateLayerGetter dict."""

    def __init__(self, widths=(8, 16, 24)):
        super().__init__()
        a, b, c = widths
        self.low = nn.Sequential(cna(3, a, 2), cna(a, a, 2))
        self.mid = cna(a, b, 2)
        self.high = nn.Sequential(cna(b, c, 2), cna(c, c))

    def forward(self, x):
        low = self.low(x)
        mid = self.mid(low)
        return {"low": low, "mid": mid, "high": self.high(mid)}


class Segmentation(nn.Module):
    """A torchvision segmentation model (its forward resizes the head's output to the input's size,
    an aux head too) as a module returning a tuple."""

    def __init__(self, net, fields):
        super().__init__()
        self.net, self.fields = net, fields

    def forward(self, x):
        out = self.net(x)
        return tuple(out[f] for f in self.fields)


class Keys(nn.Module):
    """The backbone's levels under the names a torchvision head reads."""

    def __init__(self, backbone, names):
        super().__init__()
        self.backbone, self.names = backbone, names

    def forward(self, x):
        feats = self.backbone(x)
        return {new: feats[old] for old, new in self.names.items()}


def seg_fcn():
    from torchvision.models.segmentation.fcn import FCN, FCNHead
    keys = Keys(Backbone(), {"high": "out", "mid": "aux"})
    return Segmentation(FCN(keys, FCNHead(24, 3), FCNHead(16, 3)), ["out", "aux"]), img(), ["out", "aux"]


def seg_deeplabv3():
    """ASPP's pooled branch is resized back to its input's run-time size."""
    from torchvision.models.segmentation.deeplabv3 import ASPP, DeepLabV3
    keys = Keys(Backbone(), {"high": "out"})
    # DeepLabHead's layout with ASPP narrowed from 256 channels to 16
    head = nn.Sequential(ASPP(24, [2, 3], out_channels=16), nn.Conv2d(16, 16, 3, padding=1, bias=False),
                         nn.BatchNorm2d(16), nn.ReLU(), nn.Conv2d(16, 3, 1))
    return Segmentation(DeepLabV3(keys, head), ["out"]), img(), ["out"]


def seg_lraspp():
    from torchvision.models.segmentation.lraspp import LRASPP
    net = LRASPP(Backbone(), 8, 24, 3, inter_channels=16)
    return Segmentation(net, ["out"]), img(), ["out"]


class Fpn(nn.Module):
    """torchvision's FeaturePyramidNetwork: each top-down step resizes (nearest) to the next level's
    run-time size; a max-pooled extra level."""

    def __init__(self):
        super().__init__()
        from torchvision.ops import FeaturePyramidNetwork
        from torchvision.ops.feature_pyramid_network import LastLevelMaxPool
        self.backbone = Backbone()
        self.fpn = FeaturePyramidNetwork([8, 16, 24], 16, extra_blocks=LastLevelMaxPool())

    def forward(self, x):
        return tuple(self.fpn(self.backbone(x)).values())


def fpn():
    return Fpn(), img(), ["p_low", "p_mid", "p_high", "p_pool"]


class UNet(nn.Module):
    """Decoder joins upsample to the skip's run-time size (bilinear), concatenate and convolve."""

    def __init__(self):
        super().__init__()
        self.down = nn.ModuleList([cna(3, 8), cna(8, 12, 2), cna(12, 16, 2), cna(16, 24, 2)])
        self.up = nn.ModuleList([cna(24 + 16, 16), cna(16 + 12, 12), cna(12 + 8, 8)])
        self.head = nn.Conv2d(8, 2, 1)

    def forward(self, x):
        skips = []
        for block in self.down:
            x = block(x)
            skips.append(x)
        skips.pop()
        for block in self.up:
            skip = skips.pop()
            x = F.interpolate(x, size=skip.shape[-2:], mode="bilinear", align_corners=False)
            x = block(torch.cat([x, skip], 1))
        return self.head(x)


def unet():
    return UNet(), img(), ["mask"]


class UNetClassic(nn.Module):
    """The classic U-Net's Up block: a stride-2 transposed conv, then the result padded by the
    run-time difference to the skip's size (F.pad with sizes from shapes) before the concat."""

    def __init__(self):
        super().__init__()
        self.down = nn.ModuleList([cna(3, 8), cna(8, 16, 2), cna(16, 24, 2)])
        self.up = nn.ModuleList([nn.ConvTranspose2d(24, 16, 2, stride=2), nn.ConvTranspose2d(16, 8, 2, stride=2)])
        self.fuse = nn.ModuleList([cna(32, 16), cna(16, 8)])
        self.head = nn.Conv2d(8, 2, 1)

    def forward(self, x):
        skips = []
        for block in self.down:
            x = block(x)
            skips.append(x)
        skips.pop()
        for up, fuse in zip(self.up, self.fuse):
            skip = skips.pop()
            x = up(x)
            dy, dx = skip.size(2) - x.size(2), skip.size(3) - x.size(3)
            x = F.pad(x, [dx // 2, dx - dx // 2, dy // 2, dy - dy // 2])
            x = fuse(torch.cat([skip, x], 1))
        return self.head(x)


def unet_classic():
    return UNetClassic(), img(), ["mask"]


class UNetPool(nn.Module):
    """The widely copied PyTorch U-Net's layout: floor-mode max pools down, a bilinear upsample by 2
    (align_corners) up, the result padded by the run-time difference to the skip's size (0 or 1)."""

    def __init__(self):
        super().__init__()
        self.down = nn.ModuleList([cna(3, 8), cna(8, 12), cna(12, 16)])
        self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
        self.fuse = nn.ModuleList([cna(28, 12), cna(20, 8)])
        self.head = nn.Conv2d(8, 2, 1)

    def forward(self, x):
        skips = []
        for k, block in enumerate(self.down):
            x = block(F.max_pool2d(x, 2) if k else x)
            skips.append(x)
        skips.pop()
        for fuse in self.fuse:
            skip, x = skips.pop(), self.up(x)
            dy, dx = skip.size(2) - x.size(2), skip.size(3) - x.size(3)
            x = F.pad(x, [dx // 2, dx - dx // 2, dy // 2, dy - dy // 2])
            x = fuse(torch.cat([skip, x], 1))
        return self.head(x)


def unet_pool():
    return UNetPool(), img(), ["mask"]


def timm_features():
    """A timm backbone's features_only wrapper (ResNet layout, narrow), four levels out."""
    from timm.models import resnet
    from timm.models._builder import build_model_with_cfg
    net = build_model_with_cfg(resnet.ResNet, "resnet18", pretrained=False, features_only=True,
                               feature_cfg=dict(out_indices=(1, 2, 3, 4)), block=resnet.BasicBlock,
                               layers=(1, 1, 1, 1), channels=(8, 8, 12, 16), stem_width=8)
    return Features(net), img(), ["c2", "c3", "c4", "c5"]


class Features(nn.Module):
    """A features_only net's list of levels as a tuple (the exporters' outputs)."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return tuple(self.net(x))


class YoloNeck(nn.Module):
    """A PAN-style neck: nearest upsample by 2 and concat going up, stride-2 convs and concat going
    down, a 1x1 head per level."""

    def __init__(self):
        super().__init__()
        self.backbone = Backbone()
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.top1, self.top2 = cna(24 + 16, 16), cna(16 + 8, 8)
        self.down1, self.down2 = cna(8, 8, 2), cna(8 + 16, 16)
        self.heads = nn.ModuleList([nn.Conv2d(8, 7, 1), nn.Conv2d(16, 7, 1)])

    def forward(self, x):
        f = self.backbone(x)
        p4 = self.top1(torch.cat([self.up(f["high"]), f["mid"]], 1))
        p3 = self.top2(torch.cat([self.up(p4), f["low"]], 1))
        n4 = self.down2(torch.cat([self.down1(p3), p4], 1))
        return self.heads[0](p3), self.heads[1](n4)


def yolo_neck():
    return YoloNeck(), img(), ["p3", "p4"]


def mobilenetv3_dyn():
    """torchvision's MobileNetV3-Small at width 0.1: global pooling, flatten and the classifier,
    at any input size and batch."""
    from torchvision.models import mobilenet_v3_small
    net = mobilenet_v3_small(width_mult=0.1, num_classes=CLASSES)
    net.classifier[0] = nn.Linear(net.classifier[0].in_features, 64)
    net.classifier[3] = nn.Linear(64, CLASSES)
    return net, img(), ["logits"]


def resnet18_dyn():
    """ResNet-18's layout (2 basic blocks per stage) at narrow widths, global pooling and flatten."""
    from timm.models.resnet import BasicBlock, ResNet
    net = ResNet(BasicBlock, (2, 2, 2, 2), num_classes=CLASSES, channels=(8, 8, 12, 16), stem_width=8)
    return net, img(), ["logits"]


BUILDERS = {"seg_fcn_dyn": seg_fcn, "seg_deeplabv3_dyn": seg_deeplabv3, "seg_lraspp_dyn": seg_lraspp,
            "fpn_dyn": fpn, "unet_dyn": unet, "unet_classic_dyn": unet_classic, "unet_pool_dyn": unet_pool,
            "timm_features_dyn": timm_features,
            "yolo_neck_dyn": yolo_neck, "mobilenetv3_dyn": mobilenetv3_dyn, "resnet18_dyn": resnet18_dyn}
DYNAMIC = {name: HW for name in BUILDERS}
RESIZES_TO_SIZE = {"seg_fcn_dyn", "seg_deeplabv3_dyn", "seg_lraspp_dyn", "fpn_dyn", "unet_dyn", "unet_classic_dyn",
                   "unet_pool_dyn"}
CHECKED_SIZES = {name: ODD_SIZES if name in RESIZES_TO_SIZE else SIZES for name in BUILDERS}
