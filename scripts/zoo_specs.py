"""What the zoo's model builders share: the small text sizes, input specs and the Hugging Face wrapper.

Builders (scripts/zoo_*.py and export_zoo.py's own) import these; export_zoo imports the builders,
so the shared pieces live here rather than in export_zoo (no import circle)."""
from __future__ import annotations

from torch import nn

SEQ, VOCAB, HIDDEN, HEADS, LAYERS = 8, 100, 32, 2, 2


# ---- inputs: (name, shape, dtype, kind, low, high); kind says how a test should draw values ----

def ids(name="input_ids", batch=1, seq=SEQ, vocab=VOCAB):
    return (name, [batch, seq], "int64", "ids", 0, vocab)


def mask(name="attention_mask", batch=1, seq=SEQ):
    return (name, [batch, seq], "int64", "mask", 0, 1)        # right padded, the first token kept


def image(name="pixel_values", shape=(1, 3, 32, 32)):
    return (name, list(shape), "float32", "float", -1.0, 1.0)


class Outputs(nn.Module):
    """A Hugging Face model as a module returning a tuple of selected output fields."""

    def __init__(self, inner, fields, names):
        super().__init__()
        self.inner, self.fields, self.names = inner, fields, names

    def forward(self, *args):
        out = self.inner(**dict(zip(self.names, args)))
        return tuple(out[f] for f in self.fields)


def hf(model, specs, fields):
    model.config.use_cache = False if hasattr(model.config, "use_cache") else None
    return Outputs(model, fields, [s[0] for s in specs]), specs, list(fields)


def small_text_config(cls, **extra):
    base = dict(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                intermediate_size=2 * HIDDEN, max_position_embeddings=32, hidden_dropout_prob=0.0,
                attention_probs_dropout_prob=0.0, attn_implementation="eager")
    base.update(extra)
    return cls(**base)
