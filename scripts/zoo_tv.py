"""torchvision builders of the export zoo's second round (scripts/export_zoo.py registers them): the
library's own classes (not timm's) at tiny configs, since their forward passes differ: nn.Multihead-
Attention in ViT, Swin v2's masks and rolls, MaxViT's partitions, EfficientNetV2's fused blocks, and
segmentation heads that resize to the input's size."""
from __future__ import annotations

from functools import partial

import torch
from torch import nn
from torchvision.models import convnext, efficientnet, maxvit, swin_transformer, vision_transformer
from torchvision.models.segmentation import deeplabv3, lraspp

from scripts.zoo_specs import image

CLASSES = 10


def img(size=64):
    return [image("x", (1, 3, size, size))]


def tv_vit():
    net = vision_transformer.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32,
                                               mlp_dim=64, num_classes=CLASSES)
    return net, img(32), ["logits"]


def tv_swin_v2():
    net = swin_transformer.SwinTransformer(patch_size=[2, 2], embed_dim=16, depths=[2, 2], num_heads=[2, 4],
                                           window_size=[4, 4], mlp_ratio=2.0, stochastic_depth_prob=0.0,
                                           num_classes=CLASSES, block=swin_transformer.SwinTransformerBlockV2,
                                           downsample_layer=swin_transformer.PatchMergingV2)
    return net, img(32), ["logits"]


def tv_maxvit():
    net = maxvit.MaxVit(input_size=(32, 32), stem_channels=16, partition_size=2, block_channels=[16, 32],
                        block_layers=[1, 1], head_dim=8, stochastic_depth_prob=0.0, expansion_ratio=2, mlp_ratio=2,
                        num_classes=CLASSES)
    return net, img(32), ["logits"]


def tv_convnext():
    cfg = convnext.CNBlockConfig
    net = convnext.ConvNeXt([cfg(8, 16, 1), cfg(16, 24, 1), cfg(24, None, 1)], layer_scale=0.5, num_classes=CLASSES)
    return net, img(), ["logits"]


def tv_efficientnet_v2():
    fused, mb = efficientnet.FusedMBConvConfig, partial(efficientnet.MBConvConfig, width_mult=1.0, depth_mult=1.0)
    setting = [fused(1, 3, 1, 8, 8, 1), fused(4, 3, 2, 8, 16, 1), mb(4, 3, 2, 16, 24, 1), mb(4, 3, 2, 24, 32, 1)]
    net = efficientnet.EfficientNet(setting, dropout=0.0, num_classes=CLASSES, last_channel=64)
    return net, img(), ["logits"]


class Segmentation(nn.Module):
    """A small MobileNet-like backbone under LR-ASPP's head (pooled sigmoid gate, bilinear resizes to the
    input) and DeepLabV3's ASPP (dilated branches, a pooled branch resized back)."""

    def __init__(self):
        super().__init__()
        from torchvision.ops import Conv2dNormActivation as Cna
        self.low = nn.Sequential(Cna(3, 8, stride=2), Cna(8, 16, stride=2))
        self.high = nn.Sequential(Cna(16, 24, stride=2), Cna(24, 32, stride=2))
        self.lraspp = lraspp.LRASPPHead(16, 32, 3, 16)
        self.aspp = nn.Sequential(deeplabv3.ASPP(32, (2, 3), out_channels=16), nn.Conv2d(16, 3, 1))

    def forward(self, x):
        low = self.low(x)
        high = self.high(low)
        size = x.shape[-2:]
        lr = nn.functional.interpolate(self.lraspp({"low": low, "high": high}), size=size, mode="bilinear",
                                       align_corners=False)
        dl = nn.functional.interpolate(self.aspp(high), size=size, mode="bilinear", align_corners=False)
        return lr, dl


def tv_segmentation():
    return Segmentation(), img(), ["lraspp", "deeplab"]


BUILDERS = {"tv_vit": tv_vit, "tv_swin_v2": tv_swin_v2, "tv_maxvit": tv_maxvit, "tv_convnext": tv_convnext,
            "tv_efficientnet_v2": tv_efficientnet_v2, "tv_segmentation": tv_segmentation}
