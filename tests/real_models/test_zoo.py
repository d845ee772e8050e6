"""The export zoo (models/zoo, made by scripts/export_zoo.py with both torch exporters): each model
converts and its every output matches onnxruntime in the real ncnn and in the interpreter
(|ncnn - ort| <= 1e-3 max|ort| + 1e-3 |ort|), from one converted file at the export's shapes and at
each of the manifest's checked_sizes for its dynamic axes, or it is listed in EXPECTED_REFUSED and
conversion refuses in one line containing the listed text. Fix a cause, move its models out of the table."""
import collections
import json

import onnx
import pytest

from scripts.onnx_judge import Verdict, convert_or_verdict, draw_feeds, judge_converted
from tests.onnx_cases import MODELS
from tests.real_models.bin_budget import assert_bin_within_weights

ZOO = MODELS / "zoo"
MANIFEST = json.loads((ZOO / "manifest.json").read_text())

# name -> text of its one-line refusal (tv_maxvit_dynamo's 6-D window partition converts since
# passes/fold_transpose_chains.py: its two Transposes cancel)
EXPECTED_REFUSED: dict[str, str] = {}


# a run-time sequence length keeps the transformer fusions the same model exported at a fixed length gets;
# each attention is one MultiHeadAttention or (narrow embeds, expand_small_attention) one SDPA
FUSED = ("attention", "GELU", "LayerNorm", "RMSNorm", "Swish", "MatMul", "Softmax")


def _layer_counts(converted) -> collections.Counter:
    types = collections.Counter(n.op for n in converted.graph.nodes.values())
    types["attention"] = types["MultiHeadAttention"] + types["SDPA"]
    return types


def sizes_checked(name) -> list[dict]:
    """The manifest's extra sizes for the dynamic axes (by their names), one dict per run beyond the
    manifest's own shapes: one converted file must match onnxruntime at each."""
    return MANIFEST[name].get("checked_sizes", [])


def specs(name, sizes=None):
    """The inputs' specs; with `sizes`, the dynamic axes (other than the batch) so named resized."""
    entries = {i["name"]: dict(i) for i in MANIFEST[name]["inputs"]}
    for input_name, axes in (MANIFEST[name].get("dynamic", {}) if sizes else {}).items():
        entries[input_name]["shape"] = [sizes.get(axes.get(str(k)), n)
                                        for k, n in enumerate(entries[input_name]["shape"])]
    return entries


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_zoo_model(name):
    model = onnx.load(str(ZOO / f"{name}.onnx"))
    converted = convert_or_verdict(model)
    if name in EXPECTED_REFUSED:
        assert isinstance(converted, Verdict) and converted.status == "refused", \
            f"{name} is listed as refused but gave {converted}: take it out of EXPECTED_REFUSED"
        assert EXPECTED_REFUSED[name] in converted.detail, converted.detail
        return
    assert not isinstance(converted, Verdict), converted
    assert_bin_within_weights(name, converted)
    if any("seq" in axes.values() for axes in MANIFEST[name].get("dynamic", {}).values()):
        static = name.replace("_dyn_", "_")         # bert_mask_dyn_ts: bert_mask_ts
        types, fixed = (_layer_counts(c) for c in (converted, convert_or_verdict(onnx.load(str(ZOO / f"{static}.onnx")))))
        assert {k: types[k] for k in FUSED} == {k: fixed[k] for k in FUSED}, f"{name}: {dict(types)}"
    feeds = [draw_feeds(specs(name), seed=0)]
    feeds += [draw_feeds(specs(name, sizes), seed=1 + k) for k, sizes in enumerate(sizes_checked(name))]
    verdict = judge_converted(converted, model, feeds)
    assert verdict.status == "pass", f"{name}: {verdict.detail}"


def test_every_dynamic_axis_but_the_batch_is_checked_at_other_sizes():
    for name, entry in MANIFEST.items():
        axes = {a for dims in entry.get("dynamic", {}).values() for a in dims.values()} - {"batch"}
        assert all(axes <= set(sizes) for sizes in sizes_checked(name)), name
        assert not axes or sizes_checked(name), f"{name}: dynamic {sorted(axes)} but no checked_sizes"


def test_manifest_lists_every_file_and_the_zoo_stays_small():
    files = {p.stem for p in ZOO.glob("*.onnx")}
    assert files == set(MANIFEST)
    assert set(EXPECTED_REFUSED) <= files
    # three rounds of architectures, the dynamic-seq exports and the dynamic H/W CNN, segmentation and
    # detection exports (scripts/zoo_dynhw.py): 24.0 MiB
    assert sum((ZOO / f"{n}.onnx").stat().st_size for n in files) < 25 * 2**20
