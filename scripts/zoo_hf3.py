"""Hugging Face builders of the export zoo's third round (scripts/export_zoo.py registers them):
decoder-only language models without a cache (GPT-Neo, OPT, BLOOM's ALiBi, Falcon, the RoPE family
Mistral / Qwen2 / Phi / Gemma), full encoder-decoder forwards without a cache (BART, Marian, Pegasus,
T5), Funnel's pooled encoder, XLNet's two-stream relative attention, Longformer's sliding window,
vision backbones (ConvNeXt, ResNet, RegNet, MobileViTv2, CLIP / BLIP / OWL-ViT vision, DPT) and
speech encoders (Data2Vec audio, SEW, UniSpeech, Speech2Text). Tiny configs, random weights
(export_zoo.randomize), no model hub."""
from __future__ import annotations

from scripts.zoo_specs import HEADS, HIDDEN, LAYERS, SEQ, VOCAB, hf, ids, image, mask, small_text_config
from scripts.zoo_hf import AUDIO, VISION, bart_like_config, waveform

TEXT_OUT = ["last_hidden_state"]
DECODER = dict(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=2 * HIDDEN, num_hidden_layers=LAYERS,
               num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32, use_cache=False,
               attn_implementation="eager")


def gpt_neo():
    """Alternating global and local (windowed causal) attention, no attention scaling."""
    from transformers import GPTNeoConfig, GPTNeoModel
    cfg = GPTNeoConfig(vocab_size=VOCAB, hidden_size=HIDDEN, num_layers=LAYERS, num_heads=HEADS,
                       attention_types=[[["global", "local"], 1]], window_size=4, max_position_embeddings=32,
                       intermediate_size=2 * HIDDEN, embed_dropout=0.0, attention_dropout=0.0, resid_dropout=0.0,
                       use_cache=False, attn_implementation="eager")
    return hf(GPTNeoModel(cfg), [ids(), mask()], TEXT_OUT)


def opt():
    """Learned positions offset by 2 and computed from the mask's cumulative sum."""
    from transformers import OPTConfig, OPTModel
    cfg = OPTConfig(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                    ffn_dim=2 * HIDDEN, max_position_embeddings=32, word_embed_proj_dim=HIDDEN, dropout=0.0,
                    attention_dropout=0.0, use_cache=False, attn_implementation="eager")
    return hf(OPTModel(cfg), [ids(), mask()], TEXT_OUT)


def bloom():
    """ALiBi: per-head linear position biases from the mask's cumulative sum."""
    from transformers import BloomConfig, BloomModel
    cfg = BloomConfig(vocab_size=VOCAB, hidden_size=HIDDEN, n_layer=LAYERS, n_head=4, hidden_dropout=0.0,
                      attention_dropout=0.0, use_cache=False, attn_implementation="eager")
    return hf(BloomModel(cfg), [ids(), mask()], TEXT_OUT)


def falcon():
    """Parallel attention and MLP, multi-query attention, rotary embeddings."""
    from transformers import FalconConfig, FalconModel
    cfg = FalconConfig(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=4,
                       multi_query=True, parallel_attn=True, alibi=False, new_decoder_architecture=False,
                       max_position_embeddings=32, hidden_dropout=0.0, attention_dropout=0.0, use_cache=False,
                       attn_implementation="eager")
    return hf(FalconModel(cfg), [ids(), mask()], TEXT_OUT)


def mistral():
    """Sliding-window causal attention, grouped-query heads, RoPE."""
    from transformers import MistralConfig, MistralModel
    return hf(MistralModel(MistralConfig(sliding_window=4, **DECODER)), [ids(), mask()], TEXT_OUT)


def qwen2():
    from transformers import Qwen2Config, Qwen2Model
    return hf(Qwen2Model(Qwen2Config(**DECODER)), [ids(), mask()], TEXT_OUT)


def phi():
    """Partial rotary (a quarter of each head), parallel attention and MLP, one LayerNorm per block."""
    from transformers import PhiConfig, PhiModel
    cfg = PhiConfig(partial_rotary_factor=0.5, resid_pdrop=0.0, embd_pdrop=0.0, attention_dropout=0.0, **DECODER)
    return hf(PhiModel(cfg), [ids(), mask()], TEXT_OUT)


def gemma():
    """RMSNorm with (1 + weight), scaled embeddings, GeGLU (tanh GELU), multi-query heads."""
    from transformers import GemmaConfig, GemmaModel
    cfg = GemmaConfig(head_dim=8, **{**DECODER, "num_key_value_heads": 1})
    return hf(GemmaModel(cfg), [ids(), mask()], TEXT_OUT)


def seq2seq_specs():
    return [ids(), mask(), ids("decoder_input_ids", seq=6)]


def bart():
    """The whole encoder-decoder forward (cross-attention, a causal decoder), no cache."""
    from transformers import BartConfig, BartModel
    return hf(BartModel(bart_like_config(BartConfig)), seq2seq_specs(), ["last_hidden_state", "encoder_last_hidden_state"])


def marian():
    """Sinusoidal positions, scaled embeddings."""
    from transformers import MarianConfig, MarianModel
    cfg = bart_like_config(MarianConfig, pad_token_id=0, decoder_start_token_id=0)
    return hf(MarianModel(cfg), seq2seq_specs(), ["last_hidden_state", "encoder_last_hidden_state"])


def pegasus():
    """Pre-norm layers with final LayerNorms, sinusoidal positions."""
    from transformers import PegasusConfig, PegasusModel
    return hf(PegasusModel(bart_like_config(PegasusConfig)), seq2seq_specs(), ["last_hidden_state", "encoder_last_hidden_state"])


def t5():
    """Encoder and decoder with bidirectional and causal relative position buckets."""
    from transformers import T5Config, T5Model
    cfg = T5Config(vocab_size=VOCAB, d_model=HIDDEN, d_kv=16, d_ff=2 * HIDDEN, num_layers=LAYERS, num_heads=HEADS,
                   num_decoder_layers=1, relative_attention_num_buckets=8, relative_attention_max_distance=16,
                   dropout_rate=0.0, feed_forward_proj="gated-gelu", use_cache=False, attn_implementation="eager")
    return hf(T5Model(cfg), seq2seq_specs(), ["last_hidden_state", "encoder_last_hidden_state"])


def funnel():
    """Mean-pooled queries between blocks and relative attention (the factorized form)."""
    from transformers import FunnelConfig, FunnelBaseModel
    cfg = FunnelConfig(vocab_size=VOCAB, d_model=HIDDEN, n_head=HEADS, d_head=16, d_inner=2 * HIDDEN,
                       block_sizes=[1, 1], hidden_dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
                       attention_type="factorized")
    return hf(FunnelBaseModel(cfg), [ids(), mask()], TEXT_OUT)


def xlnet():
    """Relative positional attention with a relative shift, no memory."""
    from transformers import XLNetConfig, XLNetModel
    cfg = XLNetConfig(vocab_size=VOCAB, d_model=HIDDEN, n_layer=LAYERS, n_head=HEADS, d_inner=2 * HIDDEN,
                      dropout=0.0, mem_len=None, use_mems_eval=False)
    return hf(XLNetModel(cfg), [ids(), mask()], TEXT_OUT)


def longformer():
    """Sliding-window attention over chunks with a global first token."""
    from transformers import LongformerConfig, LongformerModel
    cfg = small_text_config(LongformerConfig, attention_window=4, max_position_embeddings=40, pad_token_id=1)
    return hf(LongformerModel(cfg), [ids(seq=16), mask(seq=16)], TEXT_OUT)


def hf_convnext():
    from transformers import ConvNextConfig, ConvNextModel
    cfg = ConvNextConfig(num_channels=3, hidden_sizes=[8, 16, 24, 32], depths=[1, 1, 1, 1], layer_scale_init_value=0.5)
    return hf(ConvNextModel(cfg), [image()], ["last_hidden_state", "pooler_output"])


def hf_resnet():
    from transformers import ResNetConfig, ResNetModel
    cfg = ResNetConfig(embedding_size=8, hidden_sizes=[8, 16, 24, 32], depths=[1, 1, 1, 1], layer_type="bottleneck")
    return hf(ResNetModel(cfg), [image(shape=(1, 3, 64, 64))], ["last_hidden_state", "pooler_output"])


def hf_regnet():
    from transformers import RegNetConfig, RegNetModel
    cfg = RegNetConfig(embedding_size=8, hidden_sizes=[8, 16, 24, 32], depths=[1, 1, 1, 1], groups_width=8,
                       layer_type="y")
    return hf(RegNetModel(cfg), [image(shape=(1, 3, 64, 64))], ["last_hidden_state", "pooler_output"])


def mobilevitv2():
    """Separable (linear) self-attention over unfolded patches."""
    from transformers import MobileViTV2Config, MobileViTV2Model
    cfg = MobileViTV2Config(image_size=64, patch_size=2, width_multiplier=0.25, mlp_ratio=2.0, hidden_act="swish",
                            attn_dropout=0.0, ffn_dropout=0.0, classifier_dropout_prob=0.0)
    return hf(MobileViTV2Model(cfg), [image(shape=(1, 3, 64, 64))], ["last_hidden_state", "pooler_output"])


def clip_vision():
    from transformers import CLIPVisionConfig, CLIPVisionModel
    cfg = CLIPVisionConfig(hidden_size=HIDDEN, intermediate_size=2 * HIDDEN, num_hidden_layers=LAYERS,
                           num_attention_heads=HEADS, image_size=32, patch_size=8, attn_implementation="eager")
    return hf(CLIPVisionModel(cfg), [image()], ["last_hidden_state", "pooler_output"])


def blip_vision():
    from transformers import BlipVisionConfig
    from transformers.models.blip.modeling_blip import BlipVisionModel
    cfg = BlipVisionConfig(hidden_size=HIDDEN, intermediate_size=2 * HIDDEN, num_hidden_layers=LAYERS,
                           num_attention_heads=HEADS, image_size=32, patch_size=8, attn_implementation="eager")
    return hf(BlipVisionModel(cfg), [image()], ["last_hidden_state", "pooler_output"])


def owlvit_vision():
    from transformers import OwlViTVisionConfig, OwlViTVisionModel
    cfg = OwlViTVisionConfig(hidden_size=HIDDEN, intermediate_size=2 * HIDDEN, num_hidden_layers=LAYERS,
                             num_attention_heads=HEADS, image_size=32, patch_size=8, attn_implementation="eager")
    return hf(OwlViTVisionModel(cfg), [image()], ["last_hidden_state", "pooler_output"])


def dpt():
    """A ViT backbone, reassemble stages (resize by deconv / conv), a fusion decoder, depth head."""
    from transformers import DPTConfig, DPTForDepthEstimation
    cfg = DPTConfig(image_size=32, patch_size=8, backbone_out_indices=[0, 1, 2, 3],
                    neck_hidden_sizes=[8, 8, 16, 16], reassemble_factors=[4, 2, 1, 0.5], fusion_hidden_size=16,
                    head_in_index=-1, **{**VISION, "num_hidden_layers": 4})
    return hf(DPTForDepthEstimation(cfg), [image()], ["predicted_depth"])


def data2vec_audio():
    """Layer-normed conv features and a stack of positional convs."""
    from transformers import Data2VecAudioConfig, Data2VecAudioModel
    cfg = Data2VecAudioConfig(num_conv_pos_embeddings=3, **{k: v for k, v in AUDIO.items() if k != "num_conv_pos_embeddings"})
    return hf(Data2VecAudioModel(cfg), [waveform()], ["last_hidden_state"])


def sew():
    """Squeezed (pooled then upsampled) attention sequence."""
    from transformers import SEWConfig, SEWModel
    cfg = SEWConfig(squeeze_factor=2, **AUDIO)
    return hf(SEWModel(cfg), [waveform()], ["last_hidden_state"])


def unispeech():
    from transformers import UniSpeechConfig, UniSpeechModel
    cfg = UniSpeechConfig(feat_extract_norm="group", do_stable_layer_norm=False, **AUDIO)
    return hf(UniSpeechModel(cfg), [waveform()], ["last_hidden_state"])


def speech2text_encoder():
    """Conv1d subsampling (GLU) and sinusoidal positions over filter-bank frames."""
    from transformers import Speech2TextConfig
    from transformers.models.speech_to_text.modeling_speech_to_text import Speech2TextEncoder
    cfg = Speech2TextConfig(vocab_size=VOCAB, d_model=HIDDEN, encoder_layers=LAYERS, encoder_attention_heads=HEADS,
                            encoder_ffn_dim=2 * HIDDEN, input_feat_per_channel=16, input_channels=1,
                            num_conv_layers=2, conv_channels=32, conv_kernel_sizes=[5, 5], max_source_positions=64,
                            dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, attn_implementation="eager")
    specs = [("input_features", [1, 32, 16], "float32", "float", -1.0, 1.0)]
    return hf(Speech2TextEncoder(cfg), specs, ["last_hidden_state"])


BUILDERS = {
    "gpt_neo": gpt_neo, "opt": opt, "bloom": bloom, "falcon": falcon, "mistral": mistral, "qwen2": qwen2, "phi": phi,
    "gemma": gemma, "bart": bart, "marian": marian, "pegasus": pegasus, "t5": t5, "funnel": funnel, "xlnet": xlnet,
    "longformer": longformer, "hf_convnext": hf_convnext, "hf_resnet": hf_resnet, "hf_regnet": hf_regnet,
    "mobilevitv2": mobilevitv2, "clip_vision": clip_vision, "blip_vision": blip_vision,
    "owlvit_vision": owlvit_vision, "dpt": dpt, "data2vec_audio": data2vec_audio, "sew": sew,
    "unispeech": unispeech, "speech2text_encoder": speech2text_encoder,
}


# ---- a fourth round: more text encoders and decoders, vision and speech backbones ----

def roformer():
    """Rotary embeddings applied to queries and keys of an encoder (interleaved pairs)."""
    from transformers import RoFormerConfig, RoFormerModel
    cfg = small_text_config(RoFormerConfig, embedding_size=HIDDEN, rotary_value=False)
    return hf(RoFormerModel(cfg), [ids(), mask()], TEXT_OUT)


def gpt_neox():
    """Partial rotary (a quarter of each head), parallel residual."""
    from transformers import GPTNeoXConfig, GPTNeoXModel
    cfg = GPTNeoXConfig(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                        intermediate_size=2 * HIDDEN, rotary_pct=0.25, max_position_embeddings=32, use_cache=False,
                        hidden_dropout=0.0, attention_dropout=0.0, attn_implementation="eager")
    return hf(GPTNeoXModel(cfg), [ids(), mask()], TEXT_OUT)


def gptj():
    """Rotary on interleaved pairs of the first rotary_dim channels, parallel attention and MLP."""
    from transformers import GPTJConfig, GPTJModel
    cfg = GPTJConfig(vocab_size=VOCAB, n_embd=HIDDEN, n_layer=LAYERS, n_head=HEADS, rotary_dim=8, n_positions=32,
                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, use_cache=False, attn_implementation="eager")
    return hf(GPTJModel(cfg), [ids(), mask()], TEXT_OUT)


def mpt():
    """ALiBi biases without positions, no biases in the linears."""
    from transformers import MptConfig, MptModel
    cfg = MptConfig(vocab_size=VOCAB, d_model=HIDDEN, n_layers=LAYERS, n_heads=4, expansion_ratio=2, max_seq_len=32,
                    use_cache=False, attn_config={"alibi": True})
    return hf(MptModel(cfg), [ids(), mask()], TEXT_OUT)


def esm():
    """Protein encoder: rotary, token dropout rescaling by the mask."""
    from transformers import EsmConfig, EsmModel
    cfg = small_text_config(EsmConfig, position_embedding_type="rotary", pad_token_id=1, mask_token_id=2,
                            token_dropout=False, emb_layer_norm_before=False)
    return hf(EsmModel(cfg, add_pooling_layer=False), [ids(), mask()], TEXT_OUT)


def squeezebert():
    """Grouped 1-D convolutions instead of the linears, channels-first activations."""
    from transformers import SqueezeBertConfig, SqueezeBertModel
    cfg = small_text_config(SqueezeBertConfig, embedding_size=HIDDEN, q_groups=2, k_groups=2, v_groups=2,
                            post_attention_groups=2, intermediate_groups=2, output_groups=2)
    return hf(SqueezeBertModel(cfg), [ids(), mask()], TEXT_OUT)


def nystromformer():
    """Landmark attention with an iterative Moore-Penrose pseudo-inverse and a depthwise conv on values."""
    from transformers import NystromformerConfig, NystromformerModel
    cfg = small_text_config(NystromformerConfig, num_landmarks=2, segment_means_seq_len=SEQ, conv_kernel_size=3,
                            inv_coeff_init_option=False)
    return hf(NystromformerModel(cfg), [ids()], TEXT_OUT)     # its landmark path does not broadcast a mask


def fnet():
    """Fourier token mixing: the real part of a 2-D FFT over sequence and hidden axes."""
    from transformers import FNetConfig, FNetModel
    cfg = FNetConfig(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS, intermediate_size=2 * HIDDEN,
                     max_position_embeddings=32, hidden_dropout_prob=0.0, use_tpu_fourier_optimizations=False)
    return hf(FNetModel(cfg), [ids()], ["last_hidden_state", "pooler_output"])


def modernbert():
    """Rotary, alternating global and sliding-window attention, GeGLU, no biases."""
    from transformers import ModernBertConfig, ModernBertModel
    cfg = ModernBertConfig(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=2 * HIDDEN, num_hidden_layers=LAYERS,
                           num_attention_heads=HEADS, max_position_embeddings=32, local_attention=4,
                           global_attn_every_n_layers=2, attn_implementation="eager", pad_token_id=0,
                           eos_token_id=1, bos_token_id=2, cls_token_id=2, sep_token_id=1)
    return hf(ModernBertModel(cfg), [ids(), mask()], TEXT_OUT)


def qwen3():
    """Per-head RMSNorm of queries and keys."""
    from transformers import Qwen3Config, Qwen3Model
    return hf(Qwen3Model(Qwen3Config(head_dim=8, **DECODER)), [ids(), mask()], TEXT_OUT)


def gemma2():
    """Logit soft-capping (tanh) of attention and alternating sliding-window layers, sandwich norms."""
    from transformers import Gemma2Config, Gemma2Model
    cfg = Gemma2Config(head_dim=8, sliding_window=4, attn_logit_softcapping=20.0, query_pre_attn_scalar=8,
                       **DECODER)
    return hf(Gemma2Model(cfg), [ids(), mask()], TEXT_OUT)


def phi3():
    from transformers import Phi3Config, Phi3Model
    return hf(Phi3Model(Phi3Config(pad_token_id=0, **DECODER)), [ids(), mask()], TEXT_OUT)


def stablelm():
    """Partial rotary, LayerNorm (not RMS), optional qkv biases."""
    from transformers import StableLmConfig, StableLmModel
    return hf(StableLmModel(StableLmConfig(partial_rotary_factor=0.5, use_qkv_bias=True, **DECODER)),
              [ids(), mask()], TEXT_OUT)


def xglm():
    """Sinusoidal positions offset by the padding index, scaled embeddings, pre-norm."""
    from transformers import XGLMConfig, XGLMModel
    cfg = XGLMConfig(vocab_size=VOCAB, d_model=HIDDEN, num_layers=LAYERS, attention_heads=HEADS, ffn_dim=2 * HIDDEN,
                     max_position_embeddings=32, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
                     use_cache=False, attn_implementation="eager")
    return hf(XGLMModel(cfg), [ids(), mask()], TEXT_OUT)


def big_bird():
    """At a short sequence BigBird falls back to full attention (its sparse path needs long inputs)."""
    from transformers import BigBirdConfig, BigBirdModel
    cfg = small_text_config(BigBirdConfig, attention_type="original_full", max_position_embeddings=32)
    return hf(BigBirdModel(cfg), [ids(), mask()], ["last_hidden_state", "pooler_output"])


def rembert():
    from transformers import RemBertConfig, RemBertModel
    cfg = small_text_config(RemBertConfig, input_embedding_size=16, output_embedding_size=16)
    return hf(RemBertModel(cfg), [ids(), mask()], TEXT_OUT)


def m2m100():
    """Sinusoidal positions from the ids' non-padding cumulative count, encoder-decoder."""
    from transformers import M2M100Config, M2M100Model
    cfg = bart_like_config(M2M100Config, pad_token_id=1, decoder_start_token_id=2)
    return hf(M2M100Model(cfg), seq2seq_specs(), ["last_hidden_state", "encoder_last_hidden_state"])


def hf_levit():
    from transformers import LevitConfig, LevitModel
    cfg = LevitConfig(image_size=64, hidden_sizes=[32, 48], num_attention_heads=[2, 3], depths=[1, 1],
                      key_dim=[8, 8], mlp_ratio=[2, 2], attention_ratio=[2, 2],
                      down_ops=[["Subsample", 8, 2, 2, 2, 2]])
    return hf(LevitModel(cfg), [image(shape=(1, 3, 64, 64))], ["last_hidden_state", "pooler_output"])


def hf_pvt():
    """PVT v1: spatial-reduction attention, position embeddings resized to the input."""
    from transformers import PvtConfig, PvtModel
    cfg = PvtConfig(image_size=32, num_encoder_blocks=2, depths=[1, 1], sequence_reduction_ratios=[2, 1],
                    hidden_sizes=[16, 32], patch_sizes=[4, 2], strides=[4, 2], num_attention_heads=[1, 2],
                    mlp_ratios=[2, 2], hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return hf(PvtModel(cfg), [image()], TEXT_OUT)


def hf_efficientnet():
    from transformers import EfficientNetConfig, EfficientNetModel
    cfg = EfficientNetConfig(image_size=64, width_coefficient=0.1, depth_coefficient=0.3, hidden_dim=128,
                             dropout_rate=0.0, drop_connect_rate=0.0)
    return hf(EfficientNetModel(cfg), [image(shape=(1, 3, 64, 64))], ["last_hidden_state", "pooler_output"])


def hf_mobilenet_v2():
    """TensorFlow-style "same" padding computed from the input size, ReLU6."""
    from transformers import MobileNetV2Config, MobileNetV2Model
    cfg = MobileNetV2Config(image_size=64, depth_multiplier=0.25, tf_padding=True, classifier_dropout_prob=0.0)
    return hf(MobileNetV2Model(cfg), [image(shape=(1, 3, 64, 64))], ["last_hidden_state", "pooler_output"])


def hf_mobilenet_v1():
    from transformers import MobileNetV1Config, MobileNetV1Model
    cfg = MobileNetV1Config(image_size=64, depth_multiplier=0.25, tf_padding=True, classifier_dropout_prob=0.0)
    return hf(MobileNetV1Model(cfg), [image(shape=(1, 3, 64, 64))], ["last_hidden_state", "pooler_output"])


def bit():
    """Weight-standardized convs and group norms (BiT ResNetV2)."""
    from transformers import BitConfig, BitModel
    cfg = BitConfig(embedding_size=16, hidden_sizes=[16, 24, 32, 48], depths=[1, 1, 1, 1], layer_type="preactivation",
                    global_padding="SAME", num_groups=4)
    return hf(BitModel(cfg), [image(shape=(1, 3, 64, 64))], ["last_hidden_state", "pooler_output"])


def swiftformer():
    """Efficient additive attention (a learned global query), conv encoders."""
    from transformers import SwiftFormerConfig, SwiftFormerModel
    cfg = SwiftFormerConfig(image_size=64, depths=[1, 1, 1, 1], embed_dims=[8, 16, 24, 32], mlp_ratio=2,
                            drop_path_rate=0.0, layer_scale_init_value=0.5)
    return hf(SwiftFormerModel(cfg), [image(shape=(1, 3, 64, 64))], TEXT_OUT)


def hf_focalnet():
    from transformers import FocalNetConfig, FocalNetModel
    cfg = FocalNetConfig(image_size=32, patch_size=2, embed_dim=16, depths=[1, 1], focal_levels=[2, 2],
                         focal_windows=[3, 3], mlp_ratio=2.0, drop_path_rate=0.0, use_layerscale=True,
                         layerscale_value=0.5)
    return hf(FocalNetModel(cfg), [image()], ["last_hidden_state", "pooler_output"])


def hf_hiera():
    from transformers import HieraConfig, HieraModel
    cfg = HieraConfig(image_size=[64, 64], patch_size=[7, 7], patch_stride=[4, 4], patch_padding=[3, 3],
                      embed_dim=16, num_heads=[1, 2], depths=[1, 1], embed_dim_multiplier=2.0,
                      num_query_pool=1, query_stride=[2, 2], masked_unit_size=[8, 8], masked_unit_attention=[True, False],
                      mlp_ratio=2.0, drop_path_rate=0.0)
    return hf(HieraModel(cfg), [image(shape=(1, 3, 64, 64))], ["last_hidden_state", "pooler_output"])


def dinov2_registers():
    from transformers import Dinov2WithRegistersConfig, Dinov2WithRegistersModel
    cfg = Dinov2WithRegistersConfig(image_size=32, patch_size=8, layerscale_value=0.5, mlp_ratio=2,
                                    num_register_tokens=2, **VISION)
    return hf(Dinov2WithRegistersModel(cfg), [image()], ["last_hidden_state", "pooler_output"])


def vitdet():
    """Windowed and global attention with decomposed relative positions, no class token."""
    from transformers import VitDetConfig, VitDetModel
    cfg = VitDetConfig(image_size=32, pretrain_image_size=32, patch_size=8, window_size=2, window_block_indices=[0],
                       use_relative_position_embeddings=True, mlp_ratio=2, drop_path_rate=0.0,
                       **{k: v for k, v in VISION.items() if k not in ("intermediate_size", "hidden_dropout_prob",
                                                                       "attention_probs_dropout_prob")})
    return hf(VitDetModel(cfg), [image()], TEXT_OUT)


def glpn():
    """Segformer-like encoder and a selective feature fusion decoder for depth."""
    from transformers import GLPNConfig, GLPNForDepthEstimation
    cfg = GLPNConfig(num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[16, 32], patch_sizes=[7, 3],
                     strides=[4, 2], num_attention_heads=[1, 2], mlp_ratios=[2, 2], decoder_hidden_size=16,
                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, drop_path_rate=0.0)
    return hf(GLPNForDepthEstimation(cfg), [image()], ["predicted_depth"])


def upernet():
    """A ConvNeXt backbone, pyramid pooling (adaptive pools to 1, 2, 3, 6) and an FPN, resized logits."""
    from transformers import ConvNextConfig, UperNetConfig, UperNetForSemanticSegmentation
    backbone = ConvNextConfig(hidden_sizes=[8, 16, 24, 32], depths=[1, 1, 1, 1],
                              out_features=["stage1", "stage2", "stage3", "stage4"])
    cfg = UperNetConfig(backbone_config=backbone, hidden_size=16, auxiliary_in_channels=24, use_auxiliary_head=False,
                        num_labels=3, pool_scales=[1, 2, 3, 6])
    return hf(UperNetForSemanticSegmentation(cfg), [image(shape=(1, 3, 96, 96))], ["logits"])


def conditional_detr():
    from transformers import ConditionalDetrConfig, ConditionalDetrModel, ResNetConfig
    backbone = ResNetConfig(embedding_size=8, hidden_sizes=[8, 16, 16, 32], depths=[1, 1, 1, 1],
                            layer_type="basic", out_features=["stage4"])
    cfg = ConditionalDetrConfig(use_timm_backbone=False, backbone_config=backbone, use_pretrained_backbone=False,
                                num_queries=4, d_model=HIDDEN, encoder_layers=1, decoder_layers=1,
                                encoder_attention_heads=HEADS, decoder_attention_heads=HEADS, encoder_ffn_dim=2 * HIDDEN,
                                decoder_ffn_dim=2 * HIDDEN, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0)
    return hf(ConditionalDetrModel(cfg), [image(shape=(1, 3, 64, 64))], TEXT_OUT)


def swin2sr():
    """Super-resolution: shallow conv, Swin v2 blocks, pixel-shuffle upsampler."""
    from transformers import Swin2SRConfig, Swin2SRForImageSuperResolution
    cfg = Swin2SRConfig(image_size=16, patch_size=1, embed_dim=16, depths=[2], num_heads=[2], window_size=4,
                        mlp_ratio=2.0, upscale=2, upsampler="pixelshuffle", drop_path_rate=0.0,
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return hf(Swin2SRForImageSuperResolution(cfg), [image(shape=(1, 3, 16, 16))], ["reconstruction"])


def wavlm():
    """Gated relative position bias (bucketed) shared by the layers."""
    from transformers import WavLMConfig, WavLMModel
    cfg = WavLMConfig(num_buckets=16, max_bucket_distance=32, feat_extract_norm="group", do_stable_layer_norm=False,
                      **AUDIO)
    return hf(WavLMModel(cfg), [waveform()], TEXT_OUT)


def wav2vec2_conformer():
    """Conformer layers (depthwise conv module, GLU) with rotary position embeddings."""
    from transformers import Wav2Vec2ConformerConfig, Wav2Vec2ConformerModel
    cfg = Wav2Vec2ConformerConfig(position_embeddings_type="rotary", conv_depthwise_kernel_size=3, **AUDIO)
    return hf(Wav2Vec2ConformerModel(cfg), [waveform()], TEXT_OUT)


def sew_d():
    """DeBERTa-style disentangled attention over squeezed speech features."""
    from transformers import SEWDConfig, SEWDModel
    cfg = SEWDConfig(squeeze_factor=2, max_position_embeddings=16, position_buckets=8, share_att_key=True,
                     relative_attention=True, pos_att_type=("p2c", "c2p"), norm_rel_ebd="layer_norm",
                     **{k: v for k, v in AUDIO.items() if k != "attention_dropout"})
    return hf(SEWDModel(cfg), [waveform()], TEXT_OUT)


def audio_spectrogram():
    """AST: overlapping patches of a filter-bank image, a ViT with class and distillation tokens."""
    from transformers import ASTConfig, ASTModel
    cfg = ASTConfig(patch_size=8, frequency_stride=8, time_stride=8, max_length=32, num_mel_bins=16, **VISION)
    return hf(ASTModel(cfg), [("input_values", [1, 32, 16], "float32", "float", -1.0, 1.0)],
              ["last_hidden_state", "pooler_output"])


def encodec():
    """Conv encoder with an LSTM, quantizer-free: the encoder's embeddings (no codebook lookup)."""
    from transformers import EncodecConfig, EncodecModel
    cfg = EncodecConfig(num_filters=4, hidden_size=16, upsampling_ratios=[2, 2], codebook_size=16, num_lstm_layers=1,
                        audio_channels=1, norm_type="weight_norm", use_causal_conv=True)
    model = EncodecModel(cfg)
    return model.encoder, [("input_values", [1, 1, 64], "float32", "float", -1.0, 1.0)], ["embeddings"]


BUILDERS.update({
    "roformer": roformer, "gpt_neox": gpt_neox, "gptj": gptj, "mpt": mpt, "esm": esm, "squeezebert": squeezebert,
    "nystromformer": nystromformer, "fnet": fnet, "modernbert": modernbert, "qwen3": qwen3, "gemma2": gemma2,
    "phi3": phi3, "stablelm": stablelm, "xglm": xglm, "big_bird": big_bird, "rembert": rembert, "m2m100": m2m100,
    "hf_levit": hf_levit, "hf_pvt": hf_pvt, "hf_efficientnet": hf_efficientnet, "hf_mobilenet_v2": hf_mobilenet_v2,
    "hf_mobilenet_v1": hf_mobilenet_v1, "bit": bit, "swiftformer": swiftformer, "hf_focalnet": hf_focalnet,
    "hf_hiera": hf_hiera, "dinov2_registers": dinov2_registers, "vitdet": vitdet, "glpn": glpn, "upernet": upernet,
    "conditional_detr": conditional_detr, "swin2sr": swin2sr, "wavlm": wavlm, "wav2vec2_conformer": wav2vec2_conformer,
    "sew_d": sew_d, "audio_spectrogram": audio_spectrogram, "encodec": encodec,
})
