"""timm builders of the export zoo's third round (scripts/export_zoo.py registers them): vision
transformers and hybrids not in the first two rounds (conv-attention, cross-scale, cross-covariance,
nested, windowed-global, rotary, pooled attention, partial convs, outlook attention, MLP mixers, a
2-D LSTM), each at a tiny width and depth with random weights (export_zoo.randomize)."""
from __future__ import annotations

from functools import partial

from torch import nn

from scripts.zoo_specs import image

CLASSES = 10


def timm_net(net, size=32, deploy=False):
    if deploy:
        from timm.utils.model import reparameterize_model
        net = reparameterize_model(net)
    return net, [image("x", (1, 3, size, size))], ["logits"]


def coat():
    """Serial blocks with convolutional relative position encodings, then parallel blocks mixing scales."""
    from timm.models.coat import CoaT
    return timm_net(CoaT(img_size=32, patch_size=4, embed_dims=(16, 16, 16, 16), serial_depths=(1, 1, 1, 1),
                         parallel_depth=1, num_heads=2, mlp_ratios=(2, 2, 2, 2), crpe_window={3: 2},
                         num_classes=CLASSES))


def coat_lite():
    from timm.models.coat import CoaT
    return timm_net(CoaT(img_size=32, patch_size=4, embed_dims=(8, 16, 24, 32), serial_depths=(1, 1, 1, 1),
                         parallel_depth=0, num_heads=2, mlp_ratios=(2, 2, 2, 2), crpe_window={3: 2},
                         num_classes=CLASSES))


def crossvit():
    """Two patch sizes, the second branch's image resized; class tokens cross-attend."""
    from timm.models.crossvit import CrossVit
    return timm_net(CrossVit(img_size=32, img_scale=(1.0, 1.0), patch_size=(8, 16), embed_dim=(16, 32),
                             depth=((1, 1, 0),), num_heads=(2, 2), mlp_ratio=(2.0, 2.0, 1.0), num_classes=CLASSES))


def xcit():
    """Cross-covariance attention (over channels), local patch interaction, class attention layers."""
    from timm.models.xcit import Xcit
    return timm_net(Xcit(img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=2, mlp_ratio=2.0,
                         cls_attn_layers=1, eta=1.0, num_classes=CLASSES))


def tnt():
    """Transformer in transformer: pixel-level attention inside each patch (an unfold)."""
    from timm.models.tnt import TNT
    return timm_net(TNT(img_size=32, patch_size=8, embed_dim=32, inner_dim=8, depth=2, num_heads_inner=2,
                        num_heads_outer=2, mlp_ratio=2.0, first_stride=4, num_classes=CLASSES))


def twins():
    """Locally grouped (windowed) and global sub-sampled attention, positional convs."""
    from timm.models.twins import Twins
    return timm_net(Twins(img_size=32, patch_size=4, embed_dims=(16, 32), num_heads=(1, 2), mlp_ratios=(2, 2),
                          depths=(2, 2), sr_ratios=(2, 1), wss=(4, 2), num_classes=CLASSES))


def nest():
    """Nested blocks: attention within image blocks, aggregated by conv + pool between levels."""
    from timm.models.nest import Nest
    return timm_net(Nest(img_size=32, patch_size=4, num_levels=2, embed_dims=(16, 32), num_heads=(1, 2),
                         depths=(1, 1), mlp_ratio=2.0, num_classes=CLASSES))


def gcvit():
    """Windowed attention with global query tokens from a fused-MBConv feature extractor."""
    from timm.models.gcvit import GlobalContextVit
    return timm_net(GlobalContextVit(img_size=64, window_ratio=(32, 32, 32, 32), embed_dim=16, depths=(1, 1, 1, 1),
                                     num_heads=(1, 2, 2, 4), mlp_ratio=2.0, layer_scale=0.5, num_classes=CLASSES),
                    size=64)


def eva():
    """Rotary position embeddings on the patch grid, SwiGLU MLP, layer scales."""
    from timm.models.eva import Eva
    return timm_net(Eva(img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=2, mlp_ratio=2.0,
                        swiglu_mlp=True, scale_mlp=True, use_rot_pos_emb=True, ref_feat_shape=(4, 4),
                        init_values=0.5, num_classes=CLASSES))


def cait():
    """Talking-heads attention and class-attention layers."""
    from timm.models.cait import Cait
    return timm_net(Cait(img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=2, mlp_ratio=2.0,
                         init_values=0.5, depth_token_only=1, num_classes=CLASSES))


def convit():
    """Gated positional self-attention: a learned mix of content and relative-position attention."""
    from timm.models.convit import ConVit
    return timm_net(ConVit(img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=2, mlp_ratio=2.0,
                           local_up_to_layer=1, num_classes=CLASSES))


def mvitv2():
    """Pooled multi-scale attention (conv pooling of q/k/v), decomposed relative positions."""
    from timm.models.mvitv2 import MultiScaleVit, MultiScaleVitCfg
    cfg = MultiScaleVitCfg(depths=(1, 1), embed_dim=(16, 32), num_heads=(1, 2), patch_kernel=(3, 3),
                           patch_stride=(2, 2), patch_padding=(1, 1), stride_q=((1, 1), (2, 2)),
                           stride_kv_adaptive=(2, 2), mlp_ratio=2.0)
    return timm_net(MultiScaleVit(cfg, img_size=32, num_classes=CLASSES))


def hiera():
    """Mask-unit attention with query pooling, unrolled token order."""
    from timm.models.hiera import Hiera
    return timm_net(Hiera(img_size=64, embed_dim=8, num_heads=1, stages=(1, 1, 1), q_pool=2,
                          mlp_ratio=2.0, num_classes=CLASSES), size=64)


def fasternet():
    """Partial convolutions: a conv over the first channels, the rest passed through."""
    from timm.models.fasternet import FasterNet
    return timm_net(FasterNet(embed_dim=16, depths=(1, 1, 1, 1), mlp_ratio=2.0, feature_dim=64,
                              num_classes=CLASSES), size=64)


def repvit():
    from timm.models.repvit import RepVit
    return timm_net(RepVit(img_size=64, embed_dim=(16, 24, 32), depth=(1, 1, 1), mlp_ratio=2,
                           num_classes=CLASSES), size=64, deploy=True)


def tiny_vit():
    """MBConv stage then windowed attention with local convs and attention biases."""
    from timm.models.tiny_vit import TinyVit
    return timm_net(TinyVit(embed_dims=(16, 24, 32, 48), depths=(1, 1, 1, 1), num_heads=(1, 2, 2, 4),
                            window_sizes=(2, 2, 2, 2), mlp_ratio=2.0, num_classes=CLASSES), size=64)


def efficientvit_mit():
    """MIT EfficientViT: ReLU linear attention with multi-scale aggregation."""
    from timm.models.efficientvit_mit import EfficientVit
    return timm_net(EfficientVit(widths=(8, 16, 24, 32, 48), depths=(1, 1, 1, 1, 1), head_dim=8,
                                 head_widths=(64, 80), num_classes=CLASSES), size=64)


def focalnet():
    """Focal modulation: gated hierarchical depthwise contexts instead of attention."""
    from timm.models.focalnet import FocalNet
    return timm_net(FocalNet(embed_dim=16, depths=(1, 1, 1, 1), mlp_ratio=2.0, focal_levels=(2, 2, 2, 2),
                             focal_windows=(3, 3, 3, 3), layerscale_value=0.5, num_classes=CLASSES), size=64)


def davit():
    """Dual attention: spatial window attention and channel group attention."""
    from timm.models.davit import DaVit
    return timm_net(DaVit(depths=(1, 1, 1, 1), embed_dims=(16, 24, 32, 48), num_heads=(1, 2, 2, 4),
                          window_size=2, mlp_ratio=2.0, num_classes=CLASSES), size=64)


def swinv2_timm():
    from timm.models.swin_transformer_v2 import SwinTransformerV2
    return timm_net(SwinTransformerV2(img_size=32, patch_size=2, embed_dim=16, depths=(2, 2), num_heads=(2, 4),
                                      window_size=4, mlp_ratio=2.0, num_classes=CLASSES))


def volo():
    """Outlook attention: per-location attention over a k x k neighbourhood (unfold / fold)."""
    from timm.models.volo import VOLO
    return timm_net(VOLO(layers=(1, 1), img_size=32, patch_size=4, stem_hidden_dim=16, embed_dims=(16, 32),
                         num_heads=(1, 2), downsamples=(True, False), outlook_attention=(True, False),
                         mlp_ratio=2.0, post_layers=("ca",), num_classes=CLASSES))


def mixer():
    from timm.models.mlp_mixer import MlpMixer
    return timm_net(MlpMixer(img_size=32, patch_size=8, num_blocks=2, embed_dim=32, mlp_ratio=(0.5, 2.0),
                             num_classes=CLASSES))


def resmlp():
    from timm.models.mlp_mixer import Affine, MlpMixer, ResBlock
    return timm_net(MlpMixer(img_size=32, patch_size=8, num_blocks=2, embed_dim=32, mlp_ratio=2,
                             block_layer=partial(ResBlock, init_values=0.5), norm_layer=Affine,
                             num_classes=CLASSES))


def gmlp():
    from timm.layers import GatedMlp
    from timm.models.mlp_mixer import MlpMixer, SpatialGatingBlock
    return timm_net(MlpMixer(img_size=32, patch_size=8, num_blocks=2, embed_dim=32, mlp_ratio=4,
                             block_layer=SpatialGatingBlock, mlp_layer=GatedMlp, num_classes=CLASSES))


def sequencer():
    """Bidirectional LSTMs along rows and columns."""
    from timm.models.sequencer import Sequencer2d
    return timm_net(Sequencer2d(img_size=32, layers=(1, 1), patch_sizes=(4, 2), embed_dims=(16, 32),
                                hidden_sizes=(8, 16), mlp_ratios=(2.0, 2.0), num_classes=CLASSES))


BUILDERS = {
    "coat": coat, "coat_lite": coat_lite, "crossvit": crossvit, "xcit": xcit, "tnt": tnt, "twins": twins,
    "nest": nest, "gcvit": gcvit, "eva": eva, "cait": cait, "convit": convit, "mvitv2": mvitv2, "hiera": hiera,
    "fasternet": fasternet, "repvit": repvit, "tiny_vit": tiny_vit,
    "efficientvit_mit": efficientvit_mit, "focalnet": focalnet, "davit": davit, "swinv2_timm": swinv2_timm,
    "volo": volo, "mixer": mixer, "resmlp": resmlp, "gmlp": gmlp, "sequencer": sequencer,
}


# ---- a fifth round: timm's named CNNs and hybrids at their smallest variant (too big to commit; judged
# from a scratch folder), and ByobNet's attention blocks at a few channels ----

def named(name, size=64, deploy=False, **kwargs):
    import timm
    return lambda: timm_net(timm.create_model(name, pretrained=False, num_classes=CLASSES, **kwargs), size, deploy)


def byoa(attn, **attn_kwargs):
    """A ResNet-ish ByobNet whose last stage is self-attention: halo (blocked local attention with halos),
    bottleneck (BoTNet: relative position logits over the whole map) or lambda layers."""
    def build():
        from timm.models.byobnet import ByobNet, ByoBlockCfg, ByoModelCfg
        cfg = ByoModelCfg(blocks=(ByoBlockCfg(type="bottle", d=1, c=32, s=2, br=0.25),
                                  ByoBlockCfg(type="self_attn", d=1, c=64, s=2, br=0.25)),
                          stem_chs=16, stem_type="tiered", stem_pool="maxpool", self_attn_layer=attn,
                          self_attn_kwargs=attn_kwargs)
        return timm_net(ByobNet(cfg, num_classes=CLASSES, img_size=64), 64)
    return build


BUILDERS.update({
    "tresnet": named("tresnet_m"), "resnest": named("resnest14d"), "nf_regnet": named("nf_regnet_b0"),
    "rexnet": named("rexnet_100"), "starnet": named("starnet_s1"), "hgnetv2": named("hgnetv2_b0"),
    "mambaout": named("mambaout_femto"), "shvit": named("shvit_s1"), "lcnet": named("lcnet_050"),
    "tinynet": named("tinynet_e"), "repghost": named("repghostnet_050", deploy=True),
    "ghostnetv3": named("ghostnetv3_050", deploy=True), "skresnet": named("skresnet18"), "dla": named("dla34"),
    "res2net": named("res2net50_14w_8s"), "pit": named("pit_ti_224", size=224), "visformer": named("visformer_tiny", size=224),
    "halonet": byoa("halo", block_size=4, halo_size=1), "botnet": byoa("bottleneck", feat_size=(4, 4)),
    "lambda_net": byoa("lambda", r=5),
})
