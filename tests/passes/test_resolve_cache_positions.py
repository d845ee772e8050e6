"""resolve_cache_positions on the committed encoder-decoder steps (models/encdec): it fires where the
positions are offset by the past length, and leaves the prompt step's causal mask (queries 0..T-1
over keys 0..T-1, true and false mixed) alone. Numbers: tests/real_models/test_encdec_generation.py."""
from __future__ import annotations

from pathlib import Path

import pytest

from converter import convert
from converter.shapes.runtime_size_values import linear_parts
from converter.shapes.symbolic import Op, Ref
from passes.resolve_cache_positions import _difference

MODELS = Path(__file__).resolve().parents[2] / "models" / "encdec"
P = Ref("past_key_values.0.decoder.key", 2)


@pytest.mark.parametrize("name,rows,masks,values", [
    ("whisper_decoder_with_past_ts", 1, 1, 0),       # learned position row at past; one query sees all keys
    ("whisper_decoder_with_past_dynamo", 1, 1, 0),   # torch.export: GatherND behind a Tile by (batch, 1)
    ("bart_decoder_with_past_ts", 1, 1, 0),          # the mask reaches its Where through Cast and And
    ("t5_decoder_with_past_ts", 0, 1, 2),            # relative positions key - past, read as values
])
def test_fires_on_decoder_steps(name, rows, masks, values):
    stats = convert(MODELS / f"{name}.onnx").stats
    assert (stats["cache_position_rows"], stats["cache_masks_resolved"], stats["cache_ranges_computed"]) \
        == (rows, masks, values)


def test_prompt_step_mask_is_left():
    stats = convert(MODELS / "whisper_decoder_ts.onnx").stats
    assert stats["cache_masks_resolved"] == 0 and stats["cache_ranges_computed"] == 0


def test_difference_of_terms():
    assert _difference(Op("+", P, 1), P) == 1
    assert _difference(P, Op("+", P, 1)) == -1
    assert _difference(P, Ref("input_ids", 1)) is None     # two sizes: no number


def test_linear_parts():
    assert linear_parts(Op("+", Op("-", 0, P), -1)) == (-1, [(-1, P)])
    assert linear_parts(Op("max", P, 1)) is None
