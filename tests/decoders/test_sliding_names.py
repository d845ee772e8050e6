"""A sliding-window layer's past (its present cut to the last rows) whose length is named like other
pasts' (TorchScript names them all `past`) is converted as one length with them, right only while the
history fits the window: convert warns (Qwen2 with sliding layers through TorchScript computed other
logits past its window in ncnn, silently). Pasts named apart (torch.export), or no cut, give no warning."""
import numpy as np
import pytest
from onnx import helper

from converter import convert
from onnx_cases import make_model


def step(names, cut=(1,)):
    """past_key_values.N.key (1, 2, names[N], 4) + new rows (1, 2, T, 4) -> present.N.key, the layers in
    `cut` keeping their last 3 rows (x[:, :, -3:])."""
    nodes, inits, outputs = [], [("starts", np.array([-3], np.int64)), ("ends", np.array([2**62], np.int64)),
                                 ("axes", np.array([2], np.int64))], []
    for i in range(len(names)):
        joined = f"all{i}" if i in cut else f"present.{i}.key"
        nodes.append(helper.make_node("Concat", [f"past_key_values.{i}.key", "new"], [joined], axis=2))
        if i in cut:
            nodes.append(helper.make_node("Slice", [f"all{i}", "starts", "ends", "axes"], [f"present.{i}.key"]))
        outputs.append((f"present.{i}.key", None))
    inputs = [(f"past_key_values.{i}.key", [1, 2, n, 4]) for i, n in enumerate(names)] + [("new", [1, 2, "T", 4])]
    return make_model(nodes, inputs, outputs, inits)


@pytest.mark.parametrize("names,cut,warns", [
    (("past", "past"), (1,), True),              # TorchScript: one name, layer 1 slides (Qwen2, Gemma3)
    (("past", "past"), (0, 1), True),            # every layer slides (Mistral): the mask is longer still
    (("p0", "p1"), (1,), False),                 # torch.export names each length apart
    (("past", "past"), (), False)])              # no layer slides: one length indeed
def test_sliding_past_named_like_others_warns(names, cut, warns):
    got = [w for w in convert(step(names, cut)).stats["warnings"] if "sliding window" in w]
    assert bool(got) == warns, got
    if warns:
        assert got[0].startswith(", ".join(f"past_key_values.{i}.key" for i in cut) + " keep a sliding window")
