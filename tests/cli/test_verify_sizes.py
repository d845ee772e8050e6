"""verify on dynamic models: which sizes it chose and why, and a warning when the reference
output barely moves (a pass on such inputs proves little)."""
import numpy as np
import onnx
from onnx import helper

import converter
from onnx_cases import make_model
from test_convert_cli import run_cli, save


def image_model(metadata: dict | None = None, op: str = "Relu"):
    model = make_model([helper.make_node(op, ["images"], ["y"])],
                       [("images", ["batch", 3, "height", "width"])], [("y", ["batch", 3, "height", "width"])])
    for key, value in (metadata or {}).items():
        model.metadata_props.add(key=key, value=value)
    return model


def test_an_image_input_takes_the_size_in_the_model_metadata():
    report = converter.verify(image_model({"imgsz": "[96, 64]"}))
    assert report.passed and report.inputs == {"images": [1, 3, 96, 64]}
    assert len(report.sizes) == 1 and "metadata imgsz=[96, 64]" in report.sizes[0]


def test_an_image_input_without_hints_takes_a_multiple_of_32():
    report = converter.verify(image_model())
    assert report.inputs == {"images": [1, 3, 320, 320]} and "multiple of 32" in report.sizes[0]


def test_inputs_sharing_a_dim_name_share_the_chosen_size():
    model = make_model([helper.make_node("Add", ["a", "b"], ["y"])],
                       [("a", [1, "n", 8]), ("b", [1, "n", 8])], [("y", [1, "n", 8])])
    report = converter.verify(model)
    assert report.passed and report.inputs["a"] == report.inputs["b"] == [1, 64, 8]


def test_the_users_shapes_need_no_note(tmp_path):
    report = converter.verify(image_model(), input_shapes={"images": [1, 3, 32, 32]})
    assert report.inputs == {"images": [1, 3, 32, 32]} and report.sizes == []


def test_the_cli_says_which_sizes_it_chose(tmp_path):
    result = run_cli("verify", save(image_model({"imgsz": "[64, 64]"}), tmp_path / "m.onnx"))
    assert result.returncode == 0, result.stderr
    assert "dynamic dims chosen: images [1, 3, 64, 64]" in result.stdout


def test_a_nearly_constant_output_is_warned_about(tmp_path):
    """Sigmoid far below zero: ~1e-9 everywhere, whatever the input."""
    shift = np.array(-20.0, np.float32)
    model = make_model([helper.make_node("Add", ["x", "s"], ["t"]), helper.make_node("Sigmoid", ["t"], ["y"])],
                       [("x", [1, 3, 8, 8])], [("y", [1, 3, 8, 8])], [("s", shift)])
    report = converter.verify(model)
    assert report.passed and len(report.warnings) == 1 and "'y' is nearly constant" in report.warnings[0]
    result = run_cli("verify", save(model, tmp_path / "m.onnx"))
    assert "warning: output 'y' is nearly constant" in result.stdout and "feed real data" in result.stdout
    assert converter.verify(onnx.load(str(save(image_model(), tmp_path / "r.onnx")))).warnings == []


def test_a_decoder_steps_mask_spans_its_past_and_new_tokens():
    """Gemma3 through torch.export names the three lengths apart (s15, s70, s53); the mask it gathers
    at 0 .. P + T - 1 must be that long (onnxruntime stopped at a GatherND index before), and verify
    passes in both backends."""
    from pathlib import Path
    path = Path(__file__).resolve().parents[2] / "models" / "decoders" / "gemma3_dynamo.onnx"
    report = converter.verify(str(path), backend="both")
    past, ids = report.inputs["past_key_values.0.key"][2], report.inputs["input_ids"][1]
    assert report.passed and report.inputs["attention_mask"] == [1, past + ids]
    assert any("spans its past and new tokens" in note for note in report.sizes)
