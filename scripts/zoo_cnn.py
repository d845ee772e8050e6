"""CNN and hybrid builders of the export zoo's second round (scripts/export_zoo.py registers them):
the timm / torchvision families shipped to phones and boards, each at a tiny width and depth. Re-
parameterizable nets (RepVGG, MobileOne, FastViT) are exported in their deploy form; detection
models stop at their heads' raw outputs (no anchors, no box decoding, no NMS)."""
from __future__ import annotations

import contextlib
import inspect
from functools import partial

import torch
import torchvision
from torch import nn
from timm.utils.model import reparameterize_model

from scripts.zoo_specs import image

CLASSES = 10


def img(size=64):
    return [image("x", (1, 3, size, size))]


def timm_net(net, size=64, deploy=False):
    return (reparameterize_model(net) if deploy else net), img(size), ["logits"]


def narrow_head(net, width=64):
    """timm's EfficientNet / MobileNet / GhostNet heads keep 1280 channels at any width multiplier,
    most of a tiny net's weights: the head conv, its norm and the classifier narrowed to `width`."""
    conv = net.conv_head
    net.conv_head = nn.Conv2d(conv.in_channels, width, 1, bias=conv.bias is not None)
    for attr in ("bn2", "norm_head"):
        norm = getattr(net, attr, None)
        if isinstance(norm, nn.modules.batchnorm._BatchNorm):
            norm.num_features = width
            norm.weight, norm.bias = nn.Parameter(torch.ones(width)), nn.Parameter(torch.zeros(width))
            norm.running_mean, norm.running_var = torch.zeros(width), torch.ones(width)
    net.classifier = nn.Linear(width, CLASSES)
    return net


def efficientnet_b0():
    from timm.models.efficientnet import _gen_efficientnet
    return timm_net(narrow_head(_gen_efficientnet("efficientnet_b0", 0.1, 0.3, num_classes=CLASSES)))


def mobilenetv3(variant):
    from timm.models.mobilenetv3 import _gen_mobilenet_v3
    return timm_net(narrow_head(_gen_mobilenet_v3(variant, 0.1, 0.5, num_classes=CLASSES)))


def mobilenetv4(variant):
    from timm.models.mobilenetv3 import _gen_mobilenet_v4
    return timm_net(narrow_head(_gen_mobilenet_v4(variant, 0.1, num_classes=CLASSES)))


# MobileNetV4-hybrid's block kinds (FusedIB, ExtraDW, ConvNeXt-like, FFN, multi-query attention with
# and without key/value downsampling, layer scales) at a few channels
MNV4_HYBRID = [["er_r1_k3_s2_e4_c16"], ["uir_r1_a3_k5_s2_e4_c24", "uir_r1_a3_k0_s1_e2_c24"],
               ["uir_r1_a3_k5_s2_e4_c32", "mqa_r1_k3_h2_s1_v2_d8_c32", "uir_r1_a0_k0_s1_e2_c32"],
               ["uir_r1_a5_k5_s2_e4_c48", "mqa_r1_k3_h2_s1_d8_c48"], ["cn_r1_k1_s1_c64"]]


def mobilenetv4_hybrid():
    from timm.layers import get_act_layer
    from timm.models._efficientnet_builder import decode_arch_def
    from timm.models.mobilenetv3 import MobileNetV3
    net = MobileNetV3(decode_arch_def(MNV4_HYBRID), num_classes=CLASSES, stem_size=16, head_bias=False,
                      head_norm=True, num_features=64, act_layer=get_act_layer("gelu"), layer_scale_init_value=0.5)
    return timm_net(net)


def regnety():
    """Grouped bottlenecks with squeeze-excitation."""
    from timm.models.regnet import RegNet, RegNetCfg
    cfg = RegNetCfg(depth=6, w0=8, wa=8.0, wm=2.0, group_size=8, se_ratio=0.25, stem_width=16)
    return timm_net(RegNet(cfg, num_classes=CLASSES))


GHOST_CFGS = [[[3, 16, 16, 0, 1]], [[3, 48, 24, 0, 2]], [[5, 72, 40, 0.25, 2]], [[3, 120, 48, 0.25, 1]],
              [[5, 160, 64, 0.25, 2]]]


def ghostnet(version):
    """v2 adds the DFC attention branch (pooled, horizontal/vertical convs, sigmoid, nearest upsample)."""
    from timm.models.ghostnet import GhostNet
    return timm_net(narrow_head(GhostNet(GHOST_CFGS, num_classes=CLASSES, width=0.5, version=version)))


def repvgg():
    from timm.models.byobnet import ByobNet, ByoBlockCfg, ByoModelCfg
    cfg = ByoModelCfg(blocks=(ByoBlockCfg("rep", d=2, c=16, s=2), ByoBlockCfg("rep", d=2, c=32, s=2),
                              ByoBlockCfg("rep", d=1, c=48, s=2)), stem_type="rep", stem_chs=16, stem_pool=None)
    return timm_net(ByobNet(cfg, num_classes=CLASSES), deploy=True)


def mobileone():
    from timm.models.byobnet import ByobNet, ByoBlockCfg, ByoModelCfg
    one = partial(ByoBlockCfg, type="one", block_kwargs=dict(num_conv_branches=2))
    cfg = ByoModelCfg(blocks=(one(d=2, c=16, s=2), one(d=2, c=32, s=2), one(d=1, c=48, s=2)), stem_type="one",
                      stem_chs=16)
    return timm_net(ByobNet(cfg, num_classes=CLASSES), deploy=True)


def seresnext():
    from timm.models.resnet import Bottleneck, ResNet
    net = ResNet(Bottleneck, (1, 1, 1, 1), num_classes=CLASSES, cardinality=4, base_width=8, stem_width=16,
                 channels=(8, 12, 16, 24), block_args=dict(attn_layer="se"))
    return timm_net(net)


@contextlib.contextmanager
def narrower(cls, **defaults):
    """Build with other defaults for `cls`'s keyword arguments: EfficientFormer's stages never pass
    their attention's head count and key width, whose defaults (8 x 32) outweigh a tiny net."""
    init = cls.__init__
    saved = init.__defaults__
    params = [p for p in inspect.signature(init).parameters.values() if p.default is not p.empty]
    init.__defaults__ = tuple(defaults.get(p.name, p.default) for p in params)
    try:
        yield
    finally:
        init.__defaults__ = saved


def efficientformer():
    """Its last stage's attention biases assume 7x7 tokens: a 224 input."""
    from timm.models.efficientformer import Attention, EfficientFormer
    with narrower(Attention, key_dim=8, num_heads=2, attn_ratio=2):
        net = EfficientFormer(depths=(1, 1, 1, 2), embed_dims=(8, 16, 24, 32), num_vit=1, num_classes=CLASSES)
    return timm_net(net, size=224)


def efficientformerv2():
    from timm.models.efficientformer_v2 import Attention2d, Attention2dDownsample, EfficientFormerV2
    with narrower(Attention2d, key_dim=8, num_heads=2, attn_ratio=2), \
            narrower(Attention2dDownsample, key_dim=8, num_heads=2, attn_ratio=2):
        net = EfficientFormerV2(depths=(1, 1, 2, 2), embed_dims=(8, 16, 24, 32), num_vit=2, img_size=64,
                                num_classes=CLASSES, mlp_ratios=2)
    return timm_net(net)


def levit():
    from timm.models.levit import Levit
    net = Levit(img_size=64, embed_dim=(32, 48), key_dim=8, depth=(1, 1), num_heads=(2, 3), num_classes=CLASSES)
    return timm_net(net)


def pvt_v2():
    from timm.models.pvt_v2 import PyramidVisionTransformerV2
    net = PyramidVisionTransformerV2(depths=(1, 1, 1), embed_dims=(16, 24, 32), num_heads=(1, 2, 2),
                                     sr_ratios=(4, 2, 1), mlp_ratios=(2, 2, 2), num_classes=CLASSES)
    return timm_net(net)


def poolformer():
    from timm.models.metaformer import GroupNorm1, MetaFormer
    net = MetaFormer(depths=(1, 1, 1, 1), dims=(8, 16, 24, 32), downsample_norm=None, mlp_act=nn.GELU,
                     mlp_bias=True, norm_layers=GroupNorm1, layer_scale_init_values=1e-5,
                     res_scale_init_values=None, use_mlp_head=False, num_classes=CLASSES)
    return timm_net(net)


def convnextv2():
    """Global response norm (an L2 norm over the spatial axes) in every block."""
    from timm.models.convnext import ConvNeXt
    net = ConvNeXt(depths=(1, 1, 1, 1), dims=(8, 16, 24, 32), use_grn=True, ls_init_value=None,
                   num_classes=CLASSES)
    return timm_net(net)


def fastvit():
    from timm.models.fastvit import FastVit, RepConditionalPosEnc
    net = FastVit(layers=(1, 1, 1, 1), embed_dims=(8, 16, 32, 64), mlp_ratios=(2, 2, 2, 2),
                  pos_embs=(None, None, None, partial(RepConditionalPosEnc, spatial_shape=(7, 7))),
                  token_mixers=("repmixer", "repmixer", "repmixer", "attention"), num_classes=CLASSES)
    return timm_net(net, deploy=True)


def edgenext():
    """Split depthwise-transposed attention (XCA over channels) and a Fourier position encoding."""
    from timm.models.edgenext import EdgeNeXt
    net = EdgeNeXt(dims=(8, 16, 24, 32), depths=(1, 1, 1, 1), global_block_counts=(0, 1, 1, 1), heads=(2, 2, 2, 2),
                   d2_scales=(2, 2, 3, 4), use_pos_emb=(False, True, False, False), num_classes=CLASSES)
    return timm_net(net)


def inception_next():
    from timm.models.inception_next import MetaNeXt
    return timm_net(MetaNeXt(depths=(1, 1, 1, 1), dims=(8, 16, 24, 32), num_classes=CLASSES))


def efficientvit_m():
    """Cascaded group attention over local windows, with attention biases."""
    from timm.models.efficientvit_msra import EfficientVitMsra
    net = EfficientVitMsra(img_size=64, embed_dim=(16, 24, 32), key_dim=(8, 8, 8), depth=(1, 1, 1),
                           num_heads=(2, 2, 2), window_size=(2, 2, 2), num_classes=CLASSES)
    return timm_net(net)


# ---- torchvision families, built from their blocks at small widths ----

def shufflenet_v2():
    net = torchvision.models.ShuffleNetV2([1, 1, 1], [8, 16, 32, 48, 64], num_classes=CLASSES)
    return net, img(), ["logits"]


class SmallSqueezeNet(nn.Module):
    """SqueezeNet 1.1's layout (ceil-mode max pools between Fire modules, a conv classifier)."""

    def __init__(self):
        super().__init__()
        from torchvision.models.squeezenet import Fire
        pool = partial(nn.MaxPool2d, 3, 2, ceil_mode=True)
        self.features = nn.Sequential(nn.Conv2d(3, 16, 3, 2), nn.ReLU(), pool(), Fire(16, 4, 8, 8), Fire(16, 4, 8, 8),
                                      pool(), Fire(16, 8, 16, 16), pool(), Fire(32, 8, 16, 16))
        self.classifier = nn.Sequential(nn.Conv2d(32, CLASSES, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))

    def forward(self, x):
        return torch.flatten(self.classifier(self.features(x)), 1)


def squeezenet():
    return SmallSqueezeNet(), img(), ["logits"]


class SmallGoogLeNet(nn.Module):
    """GoogLeNet's Inception blocks (1x1 / 3x3 / 3x3-as-5x5 / pooled branches, concatenated)."""

    def __init__(self):
        super().__init__()
        from torchvision.models.googlenet import BasicConv2d, Inception
        pool = partial(nn.MaxPool2d, 3, 2, ceil_mode=True)
        self.net = nn.Sequential(BasicConv2d(3, 16, kernel_size=7, stride=2, padding=3), pool(),
                                 Inception(16, 8, 8, 16, 4, 8, 8), Inception(40, 16, 8, 16, 4, 8, 8), pool(),
                                 Inception(48, 16, 8, 16, 4, 8, 8), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                 nn.Linear(48, CLASSES))

    def forward(self, x):
        return self.net(x)


def googlenet():
    return SmallGoogLeNet(), img(), ["logits"]


def densenet():
    net = torchvision.models.DenseNet(growth_rate=8, block_config=(2, 2, 2), num_init_features=16, bn_size=2,
                                      num_classes=CLASSES)
    return net, img(), ["logits"]


class SmallVgg(nn.Module):
    def __init__(self):
        super().__init__()
        from torchvision.models.vgg import make_layers
        self.features = make_layers([8, "M", 16, 16, "M", 32, 32, "M"], batch_norm=True)
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d((2, 2)), nn.Flatten(), nn.Linear(128, 32), nn.ReLU(),
                                  nn.Linear(32, CLASSES))

    def forward(self, x):
        return self.head(self.features(x))


def vgg():
    return SmallVgg(), img(), ["logits"]


class DetectionHeads(nn.Module):
    """A small conv backbone with three levels, torchvision's FPN (P6/P7 extra levels), RetinaNet's
    heads on the pyramid and SSDLite's heads on the backbone levels: the raw outputs, concatenated
    over levels and anchors, without anchors or post-processing."""

    def __init__(self):
        super().__init__()
        from torchvision.models.detection.retinanet import RetinaNetHead
        from torchvision.models.detection.ssdlite import SSDLiteHead
        from torchvision.ops import Conv2dNormActivation as Cna, FeaturePyramidNetwork
        from torchvision.ops.feature_pyramid_network import LastLevelP6P7
        self.levels = nn.ModuleList([nn.Sequential(Cna(3, 8, stride=2), Cna(8, 16, stride=2)), Cna(16, 24, stride=2),
                                     Cna(24, 32, stride=2)])
        self.fpn = FeaturePyramidNetwork([16, 24, 32], 16, extra_blocks=LastLevelP6P7(16, 16))
        self.retina = RetinaNetHead(16, 3, 3)
        self.ssd = SSDLiteHead([16, 24, 32], [4, 4, 4], 3, partial(nn.BatchNorm2d, eps=1e-3))

    def forward(self, x):
        feats = []
        for level in self.levels:
            x = level(x)
            feats.append(x)
        pyramid = list(self.fpn({str(k): f for k, f in enumerate(feats)}).values())
        retina, ssd = self.retina(pyramid), self.ssd(feats)
        return retina["cls_logits"], retina["bbox_regression"], ssd["cls_logits"], ssd["bbox_regression"]


def detection_heads():
    return DetectionHeads(), img(), ["retina_cls", "retina_box", "ssd_cls", "ssd_box"]


BUILDERS = {
    "efficientnet_b0": efficientnet_b0, "mobilenetv3_large": lambda: mobilenetv3("mobilenetv3_large_100"),
    "mobilenetv3_small": lambda: mobilenetv3("mobilenetv3_small_100"),
    "mobilenetv4_conv": lambda: mobilenetv4("mobilenetv4_conv_small"), "mobilenetv4_hybrid": mobilenetv4_hybrid,
    "regnety": regnety,
    "ghostnet": lambda: ghostnet("v1"), "ghostnetv2": lambda: ghostnet("v2"), "repvgg": repvgg,
    "mobileone": mobileone, "seresnext": seresnext, "efficientformer": efficientformer,
    "efficientformerv2": efficientformerv2, "levit": levit,
    "pvt_v2": pvt_v2, "poolformer": poolformer,
    "convnextv2": convnextv2, "fastvit": fastvit, "edgenext": edgenext, "inception_next": inception_next,
    "efficientvit_m": efficientvit_m, "shufflenet_v2": shufflenet_v2, "squeezenet": squeezenet,
    "googlenet": googlenet, "densenet": densenet, "vgg": vgg,
    "detection_heads": detection_heads,
}
