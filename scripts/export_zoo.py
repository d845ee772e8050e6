"""Export a zoo of small transformer/CNN architectures to ONNX with both torch exporters.

    /work/zoo-venv/bin/python scripts/export_zoo.py [--out models/zoo] [--publish DIR] [NAME ...]

Needs torch, timm, transformers, onnx, onnxruntime, onnxscript (a tools venv, not a project
dependency). Every model is built from its class and a small config with random weights; no model
hub is contacted. Default initialisations leave zero heads, 1e-6 layer scales and identity
BatchNorm statistics, so every parameter is re-drawn at a scale that keeps activations O(1), the
BatchNorm statistics come from forward passes in train mode, and each output must vary over random
inputs (std > 1e-2) before the model is saved. Writes models/zoo/<name>_<exporter>.onnx and one
manifest.json (inputs with shapes, dtypes and value ranges; outputs; op counts)."""
from __future__ import annotations

import argparse
import collections
import io
import json
import math
import shutil
import sys
import traceback
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch
from torch import nn

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from scripts.zoo_specs import (  # noqa: E402
    HEADS, HIDDEN, LAYERS, VOCAB, Outputs, hf, ids, image, mask, small_text_config)

EXPORTERS = {"ts": False, "dynamo": True}       # name suffix -> torch.onnx.export(dynamo=...)


def draw(spec, rng):
    name, shape, dtype, kind, low, high = spec
    if kind == "ids":
        return rng.integers(low, high, shape).astype(dtype)
    if kind == "mask":
        m = np.ones(shape, dtype)
        for row in m.reshape(-1, shape[-1]):
            row[rng.integers(1, shape[-1] + 1):] = 0
        return m
    return rng.uniform(low, high, shape).astype(dtype)


# ---- random weights that make a comparison mean something ----

def randomize(model: nn.Module, seed: int) -> None:
    """Every parameter re-drawn: matrices ~ N(0, 1/fan_in), embeddings ~ N(0, 0.5), scales (1-D
    weights, layer-scale gammas) in [0.5, 1.5], biases ~ N(0, 0.1)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            leaf = name.rsplit(".", 1)[-1].lower()
            if p.ndim >= 2 and any(k in name.lower() for k in ("embed", "token", "pos", "wte", "wpe")):
                p.copy_(torch.randn(p.shape, generator=gen) * 0.5)
            elif p.ndim >= 2:
                fan_in = math.prod(p.shape[1:])
                p.copy_(torch.randn(p.shape, generator=gen) / math.sqrt(fan_in))
            elif "bias" in leaf or "beta" in leaf:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.1)
            else:
                p.copy_(torch.rand(p.shape, generator=gen) + 0.5)


def calibrate_batchnorm(model: nn.Module, make_args, rng) -> None:
    """Running statistics from a few forward passes in train mode (cumulative average), two input
    sets per pass so that a 1x1 feature map still has more than one value per channel."""
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None
    model.train()
    with torch.no_grad():
        for _ in range(4):
            model(*(torch.cat(pair) for pair in zip(make_args(rng), make_args(rng))))
    model.eval()


# ---- model builders: name -> (module, input specs, output names) ----

def bert(with_mask):
    from transformers import BertConfig, BertModel
    specs = [ids(), mask()] if with_mask else [ids()]
    return hf(BertModel(small_text_config(BertConfig)), specs, ["last_hidden_state", "pooler_output"])


def distilbert():
    from transformers import DistilBertConfig, DistilBertModel
    cfg = DistilBertConfig(vocab_size=VOCAB, dim=HIDDEN, n_layers=LAYERS, n_heads=HEADS, hidden_dim=2 * HIDDEN,
                           max_position_embeddings=32, dropout=0.0, attention_dropout=0.0,
                           attn_implementation="eager")
    return hf(DistilBertModel(cfg), [ids(), mask()], ["last_hidden_state"])


def roberta():
    from transformers import RobertaConfig, RobertaModel
    cfg = small_text_config(RobertaConfig, max_position_embeddings=40, pad_token_id=1)
    return hf(RobertaModel(cfg), [ids(), mask()], ["last_hidden_state", "pooler_output"])


def albert():
    from transformers import AlbertConfig, AlbertModel
    cfg = small_text_config(AlbertConfig, embedding_size=16)
    return hf(AlbertModel(cfg), [ids(), mask()], ["last_hidden_state", "pooler_output"])


def gpt2(with_mask=False):
    """With a mask the torchscript exporter never meets the packed-sequence check (aten::diff over
    position ids) that stops it without one."""
    from transformers import GPT2Config, GPT2Model
    cfg = GPT2Config(vocab_size=VOCAB, n_embd=HIDDEN, n_layer=LAYERS, n_head=HEADS, n_positions=32,
                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, use_cache=False,
                     attn_implementation="eager")
    return hf(GPT2Model(cfg), [ids(), mask()] if with_mask else [ids()], ["last_hidden_state"])


def llama():
    from transformers import LlamaConfig, LlamaModel
    cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=2 * HIDDEN, num_hidden_layers=LAYERS,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32, use_cache=False,
                      attn_implementation="eager")
    return hf(LlamaModel(cfg), [ids(), mask()], ["last_hidden_state"])


def hf_swin():
    from transformers import SwinConfig, SwinModel
    cfg = SwinConfig(image_size=32, patch_size=2, embed_dim=16, depths=[2, 2], num_heads=[2, 4], window_size=4,
                     mlp_ratio=2.0, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, drop_path_rate=0.0,
                     attn_implementation="eager")
    return hf(SwinModel(cfg), [image()], ["last_hidden_state", "pooler_output"])


def clip_text():
    from transformers import CLIPTextConfig, CLIPTextModel
    cfg = CLIPTextConfig(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                         intermediate_size=2 * HIDDEN, max_position_embeddings=32, eos_token_id=2,
                         attn_implementation="eager")
    return hf(CLIPTextModel(cfg), [ids()], ["last_hidden_state", "pooler_output"])


def t5_encoder():
    from transformers import T5Config, T5EncoderModel
    cfg = T5Config(vocab_size=VOCAB, d_model=HIDDEN, d_kv=16, d_ff=2 * HIDDEN, num_layers=LAYERS, num_heads=HEADS,
                   relative_attention_num_buckets=8, relative_attention_max_distance=16, dropout_rate=0.0,
                   attn_implementation="eager")
    return hf(T5EncoderModel(cfg), [ids(), mask()], ["last_hidden_state"])


def whisper_encoder():
    from transformers import WhisperConfig
    from transformers.models.whisper.modeling_whisper import WhisperEncoder
    cfg = WhisperConfig(vocab_size=VOCAB, num_mel_bins=16, d_model=HIDDEN, encoder_layers=LAYERS,
                        encoder_attention_heads=HEADS, encoder_ffn_dim=2 * HIDDEN, max_source_positions=16,
                        dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, attn_implementation="eager")
    specs = [("input_features", [1, 16, 32], "float32", "float", -1.0, 1.0)]
    return hf(WhisperEncoder(cfg), specs, ["last_hidden_state"])


def hf_vit():
    from transformers import ViTConfig, ViTModel
    cfg = small_text_config(ViTConfig, image_size=32, patch_size=8)
    for k in ("vocab_size", "max_position_embeddings"):
        delattr(cfg, k) if hasattr(cfg, k) else None
    return hf(ViTModel(cfg), [image()], ["last_hidden_state", "pooler_output"])


def hf_deit():
    from transformers import DeiTConfig, DeiTModel
    cfg = small_text_config(DeiTConfig, image_size=32, patch_size=8)
    return hf(DeiTModel(cfg), [image()], ["last_hidden_state", "pooler_output"])


def hf_detr():
    from transformers import DetrConfig, DetrForObjectDetection, ResNetConfig
    backbone = ResNetConfig(embedding_size=8, hidden_sizes=[8, 16, 16, 32], depths=[1, 1, 1, 1],
                            layer_type="basic", out_features=["stage4"])
    cfg = DetrConfig(use_timm_backbone=False, backbone_config=backbone, use_pretrained_backbone=False,
                     num_queries=4, d_model=HIDDEN, encoder_layers=1, decoder_layers=1, encoder_attention_heads=HEADS,
                     decoder_attention_heads=HEADS, encoder_ffn_dim=2 * HIDDEN, decoder_ffn_dim=2 * HIDDEN,
                     num_labels=3, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
                     attn_implementation="eager")
    return hf(DetrForObjectDetection(cfg), [image(shape=(1, 3, 64, 64))], ["logits", "pred_boxes"])


def timm_vit(batch=1):
    from timm.models.vision_transformer import VisionTransformer
    net = VisionTransformer(img_size=32, patch_size=8, embed_dim=HIDDEN, depth=LAYERS, num_heads=HEADS,
                            mlp_ratio=2.0, num_classes=10, init_values=1e-5)
    return net, [image("x", (batch, 3, 32, 32))], ["logits"]


def timm_deit():
    from timm.models.deit import VisionTransformerDistilled
    net = VisionTransformerDistilled(img_size=32, patch_size=8, embed_dim=HIDDEN, depth=LAYERS, num_heads=HEADS,
                                     mlp_ratio=2.0, num_classes=10)
    net.eval()
    return net, [image("x")], ["logits"]


def timm_swin():
    from timm.models.swin_transformer import SwinTransformer
    net = SwinTransformer(img_size=32, patch_size=2, embed_dim=16, depths=(2, 2), num_heads=(2, 4),
                          window_size=4, mlp_ratio=2.0, num_classes=10, drop_path_rate=0.0)
    return net, [image("x")], ["logits"]


class MobileVitNet(nn.Module):
    """A conv stem, one MobileViT block (unfold to patches, transformer, fold back, fuse), a head."""

    def __init__(self):
        super().__init__()
        from timm.models.mobilevit import MobileVitBlock
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.SiLU())
        self.block = MobileVitBlock(16, 16, transformer_dim=HIDDEN, transformer_depth=2, patch_size=2,
                                    num_heads=HEADS)
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        return self.head(self.block(self.stem(x)).mean((2, 3)))


def mobilevit():
    return MobileVitNet(), [image("x")], ["logits"]


def hf_mobilevit():
    from transformers import MobileViTConfig, MobileViTModel
    cfg = MobileViTConfig(image_size=32, patch_size=2, hidden_sizes=[16, 16, 16], neck_hidden_sizes=[8, 8, 8, 8, 16, 16, 32],
                          num_attention_heads=HEADS, mlp_ratio=2.0, expand_ratio=2.0, hidden_dropout_prob=0.0,
                          attention_probs_dropout_prob=0.0, classifier_dropout_prob=0.0,
                          attn_implementation="eager")
    return hf(MobileViTModel(cfg), [image()], ["last_hidden_state", "pooler_output"])


def maxvit():
    from timm.models.maxxvit import MaxxVit, MaxxVitCfg, MaxxVitConvCfg, MaxxVitTransformerCfg
    cfg = MaxxVitCfg(embed_dim=(16, 32), depths=(1, 1), block_type=("M", "M"), stem_width=16,
                     conv_cfg=MaxxVitConvCfg(expand_ratio=2.0, attn_ratio=0.25),
                     transformer_cfg=MaxxVitTransformerCfg(dim_head=8, expand_ratio=2.0, window_size=(2, 2),
                                                           grid_size=(2, 2)))
    return MaxxVit(cfg, img_size=32, num_classes=10), [image("x")], ["logits"]


def convnext():
    from timm.models.convnext import ConvNeXt
    net = ConvNeXt(in_chans=3, num_classes=10, depths=(1, 1, 1, 1), dims=(8, 16, 24, 32), ls_init_value=1e-6)
    return net, [image("x")], ["logits"]


class SmallCnn(nn.Module):
    """Conv-BN-ReLU, a residual block, a depthwise conv, global pooling, a linear head."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.ReLU())
        self.res = nn.Sequential(nn.Conv2d(16, 16, 3, 1, 1), nn.BatchNorm2d(16), nn.ReLU(), nn.Conv2d(16, 16, 3, 1, 1))
        self.dw = nn.Sequential(nn.Conv2d(16, 16, 3, 2, 1, groups=16), nn.BatchNorm2d(16), nn.Hardswish())
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        x = self.stem(x)
        x = torch.relu(x + self.res(x))
        return self.head(torch.flatten(nn.functional.adaptive_avg_pool2d(self.dw(x), 1), 1))


def cnn_batch2():
    return SmallCnn(), [image("x", (2, 3, 32, 32))], ["logits"]


def vit_batch2():
    return timm_vit(batch=2)


BUILDERS = {
    "bert": lambda: bert(False), "bert_mask": lambda: bert(True), "distilbert": distilbert,
    "roberta": roberta, "albert": albert, "gpt2": gpt2, "gpt2_mask": lambda: gpt2(True), "llama": llama, "clip_text": clip_text, "t5_encoder": t5_encoder,
    "whisper_encoder": whisper_encoder, "hf_vit": hf_vit, "hf_deit": hf_deit, "hf_swin": hf_swin,
    "hf_mobilevit": hf_mobilevit,
    "detr": hf_detr, "vit": timm_vit, "deit": timm_deit, "swin": timm_swin, "mobilevit": mobilevit,
    "maxvit": maxvit, "convnext": convnext, "cnn_batch2": cnn_batch2, "vit_batch2": vit_batch2,
}

# exported with these input axes dynamic (named as in dynamic_axes); the manifest's shapes are one size
SEQ_AXES = {0: "batch", 1: "seq"}
TEXT_DYN = {"input_ids": SEQ_AXES, "attention_mask": SEQ_AXES}
DYNAMIC = {"bert_mask_dyn": TEXT_DYN, "distilbert_dyn": TEXT_DYN, "roberta_dyn": TEXT_DYN, "gpt2_mask_dyn": TEXT_DYN,
           "llama_dyn": TEXT_DYN, "t5_encoder_dyn": TEXT_DYN, "albert_dyn": TEXT_DYN,
           "clip_text_dyn": {"input_ids": SEQ_AXES},
           "vit_dyn": {"x": {0: "batch"}}, "cnn_dyn": {"x": {0: "batch", 2: "height", 3: "width"}}}
BUILDERS.update({"bert_mask_dyn": lambda: bert(True), "distilbert_dyn": distilbert, "roberta_dyn": roberta,
                 "gpt2_mask_dyn": lambda: gpt2(True), "llama_dyn": llama, "t5_encoder_dyn": t5_encoder,
                 "albert_dyn": albert, "clip_text_dyn": clip_text, "vit_dyn": timm_vit,
                 "cnn_dyn": lambda: (SmallCnn(), [image("x")], ["logits"])})
# the sizes tests/real_models/test_zoo.py also runs each dynamic model at (one converted file), by axis name;
# a sequence of 16 (twice the export's) reaches past the 8 every static file holds; the batch stays 1
SEQ_SIZES = [{"seq": 5}, {"seq": 16}]
# torch.export's upper bounds: a sequence within the position table, images up to 1024 a side
DIM_MAX = {"seq": 32, "height": 1024, "width": 1024}
CHECKED_SIZES = {"bert_mask_dyn": SEQ_SIZES, "distilbert_dyn": SEQ_SIZES, "roberta_dyn": SEQ_SIZES,
                 "gpt2_mask_dyn": SEQ_SIZES, "llama_dyn": SEQ_SIZES, "t5_encoder_dyn": SEQ_SIZES,
                 "albert_dyn": SEQ_SIZES, "clip_text_dyn": SEQ_SIZES, "cnn_dyn": [{"height": 48, "width": 40}]}

# the second round's builders (phone/board CNNs and hybrids, more Hugging Face encoders) import this
# module's helpers, so they are merged into BUILDERS only when main runs
from scripts import zoo_cnn, zoo_dynhw, zoo_hf, zoo_hf3, zoo_timm3, zoo_tv, zoo_tv3  # noqa: E402


# ---- export and checks ----

def torch_args(specs, rng):
    return tuple(torch.from_numpy(draw(s, rng)) for s in specs)


def check_outputs_vary(model, specs, out_names) -> None:
    """Each output must span a real range over random inputs, else a comparison proves nothing."""
    rng = np.random.default_rng(1)
    with torch.no_grad():
        runs = [model(*torch_args(specs, rng)) for _ in range(3)]
    for k, name in enumerate(out_names):
        stacked = torch.stack([r[k].float() if isinstance(r, tuple) else r.float() for r in runs])
        std = float(stacked.std())
        if not std > 1e-2:
            raise ValueError(f"output {name} is near constant (std {std:.3g})")


def export(model, specs, out_names, path: Path, dynamo: bool, dynamic: dict | None = None,
           opset: int | None | str = "zoo") -> None:
    """`opset`: "zoo" (17 for TorchScript, 18 for dynamo, as the committed files), a number, or None
    (each exporter's own default)."""
    args = torch_args(specs, np.random.default_rng(0))
    opset = (17 if not dynamo else 18) if opset == "zoo" else opset
    kwargs = dict(input_names=[s[0] for s in specs], output_names=out_names, opset_version=opset, dynamo=dynamo)
    if dynamo:
        kwargs["external_data"] = False
    if dynamic and not dynamo:
        kwargs["dynamic_axes"] = dynamic
    elif dynamic:     # positional, one entry per input; Dims of the same name are the same size
        dims = {n: torch.export.Dim(n, max=DIM_MAX.get(n, 64)) for axes in dynamic.values() for n in axes.values()}
        shapes = tuple({a: dims[n] for a, n in dynamic.get(s[0], {}).items()} or None for s in specs)
        # an Outputs wrapper takes *args: torch.export sees one argument, the tuple of them
        kwargs["dynamic_shapes"] = (shapes,) if isinstance(model, Outputs) else shapes
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        sink = io.StringIO()
        stdout, sys.stdout = sys.stdout, sink      # the dynamo exporter prints progress lines
        try:
            torch.onnx.export(model, args, str(path), **kwargs)
        finally:
            sys.stdout = stdout
    strip_debug_info(path)


def strip_debug_info(path: Path) -> None:
    """Drop the exporters' per-node stack traces and doc strings: they hold local paths and are
    most of a small dynamo file's bytes."""
    onnx.save(without_debug_info(onnx.load(str(path))), str(path))


def without_debug_info(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model`, its graphs' and nodes' doc strings and metadata cleared (in place)."""
    graphs = [model.graph]
    while graphs:
        graph = graphs.pop()
        graph.doc_string = ""
        for node in graph.node:
            del node.metadata_props[:]
            node.doc_string = ""
            for attr in node.attribute:
                graphs.extend([attr.g] if attr.HasField("g") else list(attr.graphs))
    return model


def check_onnxruntime(model, specs, out_names, path: Path) -> None:
    """onnxruntime on the file computes what torch computes (the export itself is right)."""
    rng = np.random.default_rng(2)
    feeds = {s[0]: draw(s, rng) for s in specs}
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = session.run(None, feeds)
    with torch.no_grad():
        want = model(*(torch.from_numpy(feeds[s[0]]) for s in specs))
    want = want if isinstance(want, tuple) else (want,)
    for name, g, w in zip(out_names, got, want):
        w = w.numpy()
        if g.shape != w.shape or not np.allclose(g, w, rtol=1e-3, atol=1e-4 * max(1.0, np.abs(w).max())):
            raise ValueError(f"onnxruntime differs from torch on {name}")


def op_counts(path: Path) -> dict[str, int]:
    graph = onnx.load(str(path)).graph
    return dict(sorted(collections.Counter(n.op_type for n in graph.node).items()))


def build(name: str):
    module, specs, out_names = BUILDERS[name]()
    randomize(module, seed=0)
    module.eval()
    calibrate_batchnorm(module, lambda rng: torch_args(specs, rng), np.random.default_rng(3))
    check_outputs_vary(module, specs, out_names)
    return module, specs, out_names


def main(argv=None) -> int:
    BUILDERS.update({**zoo_cnn.BUILDERS, **zoo_hf.BUILDERS, **zoo_tv.BUILDERS, **zoo_dynhw.BUILDERS,
                     **zoo_hf3.BUILDERS, **zoo_timm3.BUILDERS, **zoo_tv3.BUILDERS})
    DYNAMIC.update(zoo_dynhw.DYNAMIC)
    CHECKED_SIZES.update(zoo_dynhw.CHECKED_SIZES)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"models to export (default all: {' '.join(BUILDERS)})")
    parser.add_argument("--out", type=Path, default=ROOT / "models" / "zoo")
    parser.add_argument("--publish", type=Path, help="also copy every file written to this folder")
    parser.add_argument("--exporters", default=",".join(EXPORTERS))
    parser.add_argument("--opset", default="zoo",
                        help="'zoo' (17 TorchScript, 18 dynamo: the committed files), a number, or 'default' "
                             "(each exporter's own)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    manifest_path = args.out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    failures = []
    for name in args.names or list(BUILDERS):
        torch.manual_seed(0)
        try:
            module, specs, out_names = build(name)
        except Exception as exc:
            failures.append(f"{name}: build: {type(exc).__name__}: {str(exc).splitlines()[0][:150]}")
            print(failures[-1], flush=True)
            continue
        for exporter in args.exporters.split(","):
            key = f"{name}_{exporter}"
            path = args.out / f"{key}.onnx"
            try:
                opset = {"zoo": "zoo", "default": None}[args.opset] if args.opset in ("zoo", "default") \
                    else int(args.opset)
                export(module, specs, out_names, path, EXPORTERS[exporter], DYNAMIC.get(name), opset)
                check_onnxruntime(module, specs, out_names, path)
            except Exception as exc:
                path.unlink(missing_ok=True)
                manifest.pop(key, None)
                detail = str(exc).strip().splitlines()[0][:150] if str(exc).strip() else ""
                failures.append(f"{key}: export: {type(exc).__name__}: {detail}")
                print(failures[-1], flush=True)
                if "-v" in sys.argv:
                    traceback.print_exc()
                continue
            ops = op_counts(path)
            manifest[key] = {
                "model": name, "exporter": exporter,
                "inputs": [dict(zip(("name", "shape", "dtype", "kind", "low", "high"), s)) for s in specs],
                "outputs": out_names, "bytes": path.stat().st_size, "ops": ops,
                **({"dynamic": DYNAMIC[name]} if name in DYNAMIC else {}),
                **({"checked_sizes": CHECKED_SIZES[name]} if name in CHECKED_SIZES else {})}
            print(f"{key}: {path.stat().st_size // 1024} KiB, {sum(ops.values())} nodes: "
                  + " ".join(f"{k}:{v}" for k, v in ops.items()), flush=True)
            if args.publish:
                args.publish.mkdir(parents=True, exist_ok=True)
                shutil.copy(path, args.publish / path.name)
        manifest_path.write_text(json.dumps(dict(sorted(manifest.items())), indent=1) + "\n")
        if args.publish:
            shutil.copy(manifest_path, args.publish / manifest_path.name)
    total = sum(p.stat().st_size for p in args.out.glob("*.onnx"))
    print(f"{len(manifest)} files, {total / 2**20:.2f} MiB in {args.out}; {len(failures)} failures")
    for f in failures:
        print("  " + f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
