"""Hugging Face builders of the export zoo's third round (scripts/export_zoo.py registers them):
decoder-only language models without a cache (GPT-Neo, OPT, BLOOM's ALiBi, Falcon, the RoPE family
Mistral / Qwen2 / Phi / Gemma), full encoder-decoder forwards without a cache (BART, Marian, Pegasus,
T5), Funnel's pooled encoder, XLNet's two-stream relative attention, Longformer's sliding window,
vision backbones (ConvNeXt, ResNet, RegNet, MobileViTv2, CLIP / BLIP / OWL-ViT vision, DPT) and
speech encoders (Data2Vec audio, SEW, UniSpeech, Speech2Text). Tiny configs, random weights
(export_zoo.randomize), no model hub."""
from __future__ import annotations

from scripts.export_zoo import HEADS, HIDDEN, LAYERS, SEQ, VOCAB, hf, ids, image, mask, small_text_config
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
