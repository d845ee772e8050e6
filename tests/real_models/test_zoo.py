"""The export zoo (models/zoo, made by scripts/export_zoo.py with both torch exporters): each model
converts and its every output matches onnxruntime in the real ncnn and in the interpreter
(|ncnn - ort| <= 1e-3 max|ort| + 1e-3 |ort|), or it is listed in EXPECTED_REFUSED and conversion
refuses in one line containing the listed text. Fix a cause, move its models out of the table."""
import json

import onnx
import pytest

from scripts.onnx_judge import Verdict, convert_or_verdict, draw_feeds, judge_converted
from tests.onnx_cases import MODELS

ZOO = MODELS / "zoo"
MANIFEST = json.loads((ZOO / "manifest.json").read_text())

RANK5 = "ncnn axes (shape"                               # a tensor of more than 4 axes after the batch
EXPECTED_REFUSED = {
    "bert_mask_dyn_ts": RANK5,                       # the mask gathered to (1, 1, 1, S, 1) at a run-time S
    "tv_maxvit_dynamo": RANK5,                       # torch.export's 6-D window partition (1, 2, 2, 2, 2, 32)
}


OTHER_SIZE = {"seq": 5, "height": 48, "width": 40}     # dynamic axes are also tried at these sizes


def specs(name, resized=False):
    """The inputs' specs; `resized`: with the dynamic axes (other than the batch) at OTHER_SIZE."""
    entries = {i["name"]: dict(i) for i in MANIFEST[name]["inputs"]}
    for input_name, axes in (MANIFEST[name].get("dynamic", {}) if resized else {}).items():
        entries[input_name]["shape"] = [OTHER_SIZE.get(axes.get(str(k)), n)
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
    feeds = [draw_feeds(specs(name), seed=0)]
    if any(set(axes.values()) & set(OTHER_SIZE) for axes in MANIFEST[name].get("dynamic", {}).values()):
        feeds.append(draw_feeds(specs(name, resized=True), seed=1))     # one file for every size
    verdict = judge_converted(converted, model, feeds)
    assert verdict.status == "pass", f"{name}: {verdict.detail}"


def test_manifest_lists_every_file_and_the_zoo_stays_small():
    files = {p.stem for p in ZOO.glob("*.onnx")}
    assert files == set(MANIFEST)
    assert set(EXPECTED_REFUSED) <= files
    assert sum((ZOO / f"{n}.onnx").stat().st_size for n in files) < 16 * 2**20
