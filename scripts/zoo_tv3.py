"""torchvision builders of the export zoo's third round (scripts/export_zoo.py registers them): video
networks over [B, C, T, H, W] clips (3-D and (2+1)-D residual blocks, Swin3D's shifted 3-D windows),
RAFT's optical flow (correlation pyramid, grid sampling, recurrent updates) and MNASNet, at tiny
widths with random weights (export_zoo.randomize)."""
from __future__ import annotations

from functools import partial

import torch
from torch import nn

from scripts.zoo_specs import image

CLASSES = 10


def clip(shape=(1, 3, 4, 32, 32)):
    return [image("x", shape)]


class SmallVideoResNet(nn.Module):
    """torchvision's video ResNet blocks at 8-16 channels: an R(2+1)D stem, a 3-D block, a (2+1)-D block
    and a no-temporal block with a stride, global 3-D pooling."""

    def __init__(self):
        super().__init__()
        from torchvision.models.video.resnet import (BasicBlock, Conv2Plus1D, Conv3DNoTemporal, Conv3DSimple,
                                                     R2Plus1dStem)
        self.stem = R2Plus1dStem()          # 3 -> 45 -> 64 channels, fixed by torchvision
        self.squeeze = nn.Sequential(nn.Conv3d(64, 8, 1, bias=False), nn.BatchNorm3d(8), nn.ReLU())
        self.block3d = BasicBlock(8, 8, Conv3DSimple)
        self.block21 = BasicBlock(8, 8, Conv2Plus1D, stride=1)
        down = nn.Sequential(nn.Conv3d(8, 16, 1, stride=(1, 2, 2), bias=False), nn.BatchNorm3d(16))
        self.block2d = BasicBlock(8, 16, Conv3DNoTemporal, stride=2, downsample=down)
        self.head = nn.Linear(16, CLASSES)

    def forward(self, x):
        x = self.block2d(self.block21(self.block3d(self.squeeze(self.stem(x)))))
        return self.head(nn.functional.adaptive_avg_pool3d(x, 1).flatten(1))


def video_resnet():
    return SmallVideoResNet(), clip(), ["logits"]


def swin3d():
    from torchvision.models.video.swin_transformer import SwinTransformer3d
    net = SwinTransformer3d(patch_size=[2, 4, 4], embed_dim=16, depths=[1, 1], num_heads=[2, 4], window_size=[2, 2, 2],
                            mlp_ratio=2.0, num_classes=CLASSES)
    return net, clip((1, 3, 4, 32, 32)), ["logits"]


class FewUpdates(nn.Module):
    """RAFT with two recurrent flow updates (not 12), its last flow estimate as the output."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, image1, image2):
        return self.net(image1, image2, num_flow_updates=2)[-1]


def raft_small():
    from torchvision.models.optical_flow import raft_small as build
    net = build(weights=None)
    return FewUpdates(net), [image("image1", (1, 3, 128, 128)), image("image2", (1, 3, 128, 128))], ["flow"]


def mnasnet():
    from torchvision.models import MNASNet
    return MNASNet(alpha=0.25, num_classes=CLASSES), [image("x", (1, 3, 64, 64))], ["logits"]


BUILDERS = {"video_resnet": video_resnet, "swin3d": swin3d, "raft_small": raft_small, "mnasnet": mnasnet}
