"""Build the small transformer test models into <repo>/models/, in the op patterns torch.onnx
export emits for BERT- and ViT-style encoders (Shape/Gather/Unsqueeze/Concat glue before every
Reshape, the padding mask through Cast/Sub/Where, GELU as Erf, the class token through
Expand with a -1 shape fixed by Equal/Where).

Usage:
    python scripts/build_transformers.py            # (re)write models/bert_tiny.onnx, vit_tiny.onnx
    python scripts/build_transformers.py --check    # validate the files on disk
"""
import argparse
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from scripts.build_models import MODELS_DIR, Graph  # noqa: E402

HIDDEN, HEADS, FFN, LAYERS = 32, 2, 64, 2
HEAD_DIM = HIDDEN // HEADS
FLOAT_MIN = float(np.finfo(np.float32).min)


class Exported(Graph):
    """The builder with torch.onnx's idioms."""
    PRODUCER = "build_transformers.py"

    def i64(self, *values):
        return self.const(np.array(values, np.int64), dtype=np.int64)

    def scalar(self, value):
        return self.const(np.array(value, np.float32))

    def dim(self, x, axis):
        """x.shape[axis] as a 1-element int64 tensor: Shape -> Gather -> Unsqueeze."""
        d = self.op("Gather", self.op("Shape", x), self.const(np.array(axis, np.int64), dtype=np.int64), axis=0)
        return self.op("Unsqueeze", d, self.i64(0))

    def view(self, x, *tail):
        """x.view(x.size(0), x.size(1), *tail)."""
        return self.op("Reshape", x, self.op("Concat", self.dim(x, 0), self.dim(x, 1), self.i64(*tail), axis=0))

    def gelu(self, x):
        erf = self.op("Erf", self.op("Div", x, self.scalar(np.sqrt(2.0))))
        return self.op("Mul", self.op("Mul", x, self.op("Add", erf, self.scalar(1.0))), self.scalar(0.5))

    def attention(self, x, mask_bias=None):
        """Multi-head self-attention on (1, T, HIDDEN)."""
        def heads(t, perm):
            return self.op("Transpose", self.view(t, HEADS, HEAD_DIM), perm=perm)
        q = heads(self.linear(x, HIDDEN, HIDDEN), [0, 2, 1, 3])
        k = heads(self.linear(x, HIDDEN, HIDDEN), [0, 2, 3, 1])
        v = heads(self.linear(x, HIDDEN, HIDDEN), [0, 2, 1, 3])
        scores = self.op("Div", self.op("MatMul", q, k), self.scalar(np.sqrt(HEAD_DIM)))
        if mask_bias is not None:
            scores = self.op("Add", scores, mask_bias)
        context = self.op("MatMul", self.op("Softmax", scores, axis=-1), v)
        context = self.op("Transpose", context, perm=[0, 2, 1, 3])
        return self.linear(self.view(context, HIDDEN), HIDDEN, HIDDEN)

    def mlp(self, x):
        return self.linear(self.gelu(self.linear(x, HIDDEN, FFN)), FFN, HIDDEN)



def bert_tiny() -> onnx.ModelProto:
    """BERT-style encoder: token + position + token-type embeddings, padding mask, 2 post-LN layers, pooler, classifier."""
    g = Exported("bert_tiny", seed=11)
    vocab, max_positions, seq = 50, 64, 8
    words = g.op("Gather", g.const(g.randn(vocab, HIDDEN, scale=0.5)), "input_ids")
    # position_ids buffer sliced to the sequence length; token types are a zeros buffer
    positions = g.op("Slice", g.const(np.arange(max_positions)[None], dtype=np.int64), g.i64(0),
                     g.dim("input_ids", 1), g.i64(1))
    position_emb = g.op("Gather", g.const(g.randn(max_positions, HIDDEN, scale=0.5)), positions)
    types = g.op("Gather", g.const(g.randn(2, HIDDEN, scale=0.5)), g.const(np.zeros((1, seq)), dtype=np.int64))
    x = g.layer_norm(g.op("Add", g.op("Add", words, types), position_emb), HIDDEN)
    # extended mask: (1 - mask[:, None, None, :]) masked to finfo.min where padded
    inverted = g.op("Sub", g.scalar(1.0), g.op("Cast", g.op("Unsqueeze", "attention_mask", g.i64(1, 2)),
                                               to=TensorProto.FLOAT))
    mask_bias = g.op("Where", g.op("Cast", inverted, to=TensorProto.BOOL), g.scalar(FLOAT_MIN), inverted)
    for _ in range(LAYERS):
        x = g.layer_norm(g.op("Add", g.attention(x, mask_bias), x), HIDDEN)
        x = g.layer_norm(g.op("Add", g.mlp(x), x), HIDDEN)
    first = g.op("Gather", x, g.const(np.array(0, np.int64), dtype=np.int64), axis=1)
    pooled = g.op("Tanh", g.linear(first, HIDDEN, HIDDEN))
    g.op("Add", g.op("MatMul", pooled, g.weight(HIDDEN, 3, fan_in=HIDDEN)), g.const(g.randn(3, scale=0.1)),
         out="logits")
    return g.build_typed({"input_ids": ((1, seq), TensorProto.INT64), "attention_mask": ((1, seq), TensorProto.INT64)},
                         {"logits": ((1, 3), TensorProto.FLOAT)}, bert_tiny.__doc__)


def vit_tiny() -> onnx.ModelProto:
    """ViT-style encoder: 8x8 patch-embedding Conv, class token, position embeddings, 2 pre-LN layers, head."""
    g = Exported("vit_tiny", seed=12)
    patches = g.conv("pixel_values", 3, HIDDEN, k=8, stride=8, pad=0)            # (1, 32, 4, 4)
    flat = g.op("Reshape", patches, g.op("Concat", g.dim(patches, 0), g.dim(patches, 1), g.i64(-1), axis=0))
    tokens = g.op("Transpose", flat, perm=[0, 2, 1])                                    # flatten(2).transpose(1, 2)
    tokens = g.op("Reshape", tokens, g.op("Concat", g.dim(tokens, 0), g.i64(-1, HIDDEN), axis=0))
    # cls_token.expand(batch, -1, -1): torch writes the -1s through Equal/Where
    shape = g.op("Concat", g.dim("pixel_values", 0), g.i64(-1), g.i64(-1), axis=0)
    shape = g.op("Where", g.op("Equal", shape, g.i64(-1, -1, -1)), g.i64(1, 1, 1), shape)
    cls = g.op("Expand", g.const(g.randn(1, 1, HIDDEN, scale=0.5)), shape)
    x = g.op("Add", g.op("Concat", cls, tokens, axis=1), g.const(g.randn(1, 17, HIDDEN, scale=0.5)))
    for _ in range(LAYERS):
        x = g.op("Add", g.attention(g.layer_norm(x, HIDDEN)), x)
        x = g.op("Add", g.mlp(g.layer_norm(x, HIDDEN)), x)
    first = g.op("Gather", g.layer_norm(x, HIDDEN), g.const(np.array(0, np.int64), dtype=np.int64), axis=1)
    g.op("Add", g.op("MatMul", first, g.weight(HIDDEN, 5, fan_in=HIDDEN)), g.const(g.randn(5, scale=0.1)),
         out="logits")
    return g.build_typed({"pixel_values": ((1, 3, 32, 32), TensorProto.FLOAT)},
                         {"logits": ((1, 5), TensorProto.FLOAT)}, vit_tiny.__doc__)


BUILDERS = {"bert_tiny": bert_tiny, "vit_tiny": vit_tiny}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="validate the models on disk instead of writing")
    args = parser.parse_args()
    for name, build in BUILDERS.items():
        path = MODELS_DIR / f"{name}.onnx"
        if args.check:
            onnx.checker.check_model(onnx.load(str(path)), full_check=True)
            print(f"ok {path}")
            continue
        onnx.save(build(), str(path))
        print(f"wrote {path} ({path.stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
