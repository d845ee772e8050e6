"""Hugging Face builders of the export zoo's second round (scripts/export_zoo.py registers them):
text encoders (ELECTRA, MPNet, XLM-RoBERTa, DeBERTa v1/v2, BART/mBART encoders, ConvBERT,
MobileBERT, SigLIP text), vision encoders (Segformer, BEiT, DINOv2, YOLOS, Swinv2, CvT,
Data2VecVision, ViTMAE, SigLIP vision) and speech encoders (wav2vec2, HuBERT). Tiny configs,
random weights (export_zoo.randomize), no model hub."""
from __future__ import annotations

import torch
from torch import nn

from scripts.zoo_specs import HEADS, HIDDEN, LAYERS, SEQ, VOCAB, hf, ids, image, mask, small_text_config

VISION = dict(hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS, intermediate_size=2 * HIDDEN,
              hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, attn_implementation="eager")
TEXT_OUT = ["last_hidden_state"]


def electra():
    from transformers import ElectraConfig, ElectraModel
    cfg = small_text_config(ElectraConfig, embedding_size=16)
    return hf(ElectraModel(cfg), [ids(), mask()], TEXT_OUT)


def mpnet():
    from transformers import MPNetConfig, MPNetModel
    cfg = small_text_config(MPNetConfig, max_position_embeddings=40)
    return hf(MPNetModel(cfg), [ids(), mask()], ["last_hidden_state", "pooler_output"])


def xlm_roberta():
    from transformers import XLMRobertaConfig, XLMRobertaModel
    cfg = small_text_config(XLMRobertaConfig, max_position_embeddings=40, pad_token_id=1)
    return hf(XLMRobertaModel(cfg), [ids(), mask()], ["last_hidden_state", "pooler_output"])


def deberta():
    """DeBERTa v1: disentangled relative attention (c2p and p2c), relative positions in [-k, k)."""
    from transformers import DebertaConfig, DebertaModel
    cfg = small_text_config(DebertaConfig, relative_attention=True, max_relative_positions=8,
                            pos_att_type=["c2p", "p2c"], position_biased_input=False)
    return hf(DebertaModel(cfg), [ids(), mask()], TEXT_OUT)


def deberta_v2():
    """DeBERTa v2/v3: log-bucketed relative positions, shared key projections."""
    from transformers import DebertaV2Config, DebertaV2Model
    cfg = small_text_config(DebertaV2Config, relative_attention=True, max_relative_positions=16, position_buckets=8,
                            pos_att_type=["c2p", "p2c"], position_biased_input=False, share_att_key=True,
                            norm_rel_ebd="layer_norm")
    return hf(DebertaV2Model(cfg), [ids(), mask()], TEXT_OUT)


def bart_like_config(cls, **extra):
    return cls(vocab_size=VOCAB, d_model=HIDDEN, encoder_layers=LAYERS, decoder_layers=1, encoder_attention_heads=HEADS,
               decoder_attention_heads=HEADS, encoder_ffn_dim=2 * HIDDEN, decoder_ffn_dim=2 * HIDDEN,
               max_position_embeddings=32, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
               attn_implementation="eager", **extra)


def bart_encoder():
    from transformers import BartConfig, BartModel
    return hf(BartModel(bart_like_config(BartConfig)).encoder, [ids(), mask()], TEXT_OUT)


def mbart_encoder():
    """mBART: pre-norm layers and a final LayerNorm (BART is post-norm)."""
    from transformers import MBartConfig, MBartModel
    return hf(MBartModel(bart_like_config(MBartConfig)).encoder, [ids(), mask()], TEXT_OUT)


def convbert():
    """Span-based dynamic convolution heads next to self-attention (an unfold over the sequence)."""
    from transformers import ConvBertConfig, ConvBertModel
    cfg = small_text_config(ConvBertConfig, embedding_size=HIDDEN, head_ratio=2, conv_kernel_size=3, num_groups=1)
    return hf(ConvBertModel(cfg), [ids(), mask()], TEXT_OUT)


def mobilebert():
    from transformers import MobileBertConfig, MobileBertModel
    cfg = small_text_config(MobileBertConfig, embedding_size=16, intra_bottleneck_size=16, true_hidden_size=16,
                            num_feedforward_networks=2, intermediate_size=32)
    return hf(MobileBertModel(cfg), [ids(), mask()], ["last_hidden_state", "pooler_output"])


def siglip_text():
    from transformers import SiglipTextConfig, SiglipTextModel
    cfg = SiglipTextConfig(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=2 * HIDDEN, num_hidden_layers=LAYERS,
                           num_attention_heads=HEADS, max_position_embeddings=SEQ, attn_implementation="eager")
    return hf(SiglipTextModel(cfg), [ids()], ["last_hidden_state", "pooler_output"])


def siglip_vision():
    from transformers import SiglipVisionConfig, SiglipVisionModel
    cfg = SiglipVisionConfig(hidden_size=HIDDEN, intermediate_size=2 * HIDDEN, num_hidden_layers=LAYERS,
                             num_attention_heads=HEADS, image_size=32, patch_size=8, attn_implementation="eager")
    return hf(SiglipVisionModel(cfg), [image()], ["last_hidden_state", "pooler_output"])


def segformer():
    from transformers import SegformerConfig, SegformerForSemanticSegmentation
    cfg = SegformerConfig(num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[16, 32],
                          patch_sizes=[7, 3], strides=[4, 2], num_attention_heads=[1, 2], mlp_ratios=[2, 2],
                          decoder_hidden_size=32, num_labels=3, hidden_dropout_prob=0.0,
                          attention_probs_dropout_prob=0.0, classifier_dropout_prob=0.0, drop_path_rate=0.0)
    return hf(SegformerForSemanticSegmentation(cfg), [image()], ["logits"])


def beit():
    """Relative position bias tables per layer, layer scales, mean pooling."""
    from transformers import BeitConfig, BeitModel
    cfg = BeitConfig(image_size=32, patch_size=8, use_relative_position_bias=True, use_mean_pooling=True,
                     layer_scale_init_value=0.1, **VISION)
    return hf(BeitModel(cfg), [image()], ["last_hidden_state", "pooler_output"])


def data2vec_vision():
    from transformers import Data2VecVisionConfig, Data2VecVisionModel
    cfg = Data2VecVisionConfig(image_size=32, patch_size=8, use_shared_relative_position_bias=True,
                               use_mean_pooling=True, layer_scale_init_value=0.1, **VISION)
    return hf(Data2VecVisionModel(cfg, add_pooling_layer=True), [image()], ["last_hidden_state", "pooler_output"])


def dinov2():
    """Position embeddings bicubically resized to the patch grid, layer scales, a register-free CLS."""
    from transformers import Dinov2Config, Dinov2Model
    cfg = Dinov2Config(image_size=32, patch_size=8, layerscale_value=0.5, mlp_ratio=2, **VISION)
    return hf(Dinov2Model(cfg), [image()], ["last_hidden_state", "pooler_output"])


def yolos():
    """A ViT with detection tokens and box/class heads (no post-processing)."""
    from transformers import YolosConfig, YolosForObjectDetection
    cfg = YolosConfig(image_size=[32, 32], patch_size=8, num_detection_tokens=4, num_labels=3, **VISION)
    return hf(YolosForObjectDetection(cfg), [image()], ["logits", "pred_boxes"])


def swinv2():
    """Cosine attention with a learned logit scale and a continuous position bias MLP."""
    from transformers import Swinv2Config, Swinv2Model
    cfg = Swinv2Config(image_size=32, patch_size=2, embed_dim=16, depths=[2, 2], num_heads=[2, 4], window_size=4,
                       mlp_ratio=2.0, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, drop_path_rate=0.0,
                       attn_implementation="eager")
    return hf(Swinv2Model(cfg), [image()], ["last_hidden_state", "pooler_output"])


def cvt():
    """Convolutional token embeddings and depthwise-conv q/k/v projections."""
    from transformers import CvtConfig, CvtModel
    cfg = CvtConfig(embed_dim=[16, 24, 32], num_heads=[1, 2, 2], depth=[1, 2, 3], mlp_ratio=[2.0, 2.0, 2.0],
                    drop_path_rate=[0.0, 0.0, 0.0])
    return hf(CvtModel(cfg), [image()], ["last_hidden_state"])


class FixedNoise(nn.Module):
    """ViTMAE's encoder with its random patch shuffle made a constant (the same noise every call)."""

    def __init__(self, inner, patches):
        super().__init__()
        self.inner = inner
        self.register_buffer("noise", torch.rand(1, patches, generator=torch.Generator().manual_seed(5)))

    def forward(self, pixel_values):
        out = self.inner(pixel_values=pixel_values, noise=self.noise)
        return out.last_hidden_state


def vitmae():
    from transformers import ViTMAEConfig, ViTMAEModel
    cfg = ViTMAEConfig(image_size=32, patch_size=8, mask_ratio=0.5, **VISION)
    return FixedNoise(ViTMAEModel(cfg), 16), [image()], ["last_hidden_state"]


AUDIO = dict(hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS, intermediate_size=2 * HIDDEN,
             conv_dim=(16, 16, 16), conv_kernel=(10, 3, 3), conv_stride=(5, 2, 2), num_conv_pos_embeddings=8,
             num_conv_pos_embedding_groups=4, hidden_dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
             feat_proj_dropout=0.0, layerdrop=0.0, mask_time_prob=0.0, attn_implementation="eager")


def waveform():
    return ("input_values", [1, 400], "float32", "float", -1.0, 1.0)


def wav2vec2():
    """Group-normed conv feature extractor (post-norm layers)."""
    from transformers import Wav2Vec2Config, Wav2Vec2Model
    cfg = Wav2Vec2Config(feat_extract_norm="group", do_stable_layer_norm=False, **AUDIO)
    return hf(Wav2Vec2Model(cfg), [waveform()], ["last_hidden_state"])


def hubert():
    """Layer-normed conv feature extractor and pre-norm ("stable") layers."""
    from transformers import HubertConfig, HubertModel
    cfg = HubertConfig(feat_extract_norm="layer", do_stable_layer_norm=True, **AUDIO)
    return hf(HubertModel(cfg), [waveform()], ["last_hidden_state"])


BUILDERS = {
    "electra": electra, "mpnet": mpnet, "xlm_roberta": xlm_roberta, "deberta": deberta, "deberta_v2": deberta_v2,
    "bart_encoder": bart_encoder, "mbart_encoder": mbart_encoder, "convbert": convbert, "mobilebert": mobilebert,
    "siglip_text": siglip_text, "siglip_vision": siglip_vision, "segformer": segformer, "beit": beit,
    "data2vec_vision": data2vec_vision, "dinov2": dinov2, "yolos": yolos, "swinv2": swinv2, "cvt": cvt,
    "vitmae": vitmae, "wav2vec2": wav2vec2, "hubert": hubert,
}
