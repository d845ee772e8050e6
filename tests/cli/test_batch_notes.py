"""The -j table as a user reads it (issue 24, item 10): a dynamically quantized model is "approximate",
not plain "ok"; a refusal stays a readable line; the Divs the converter writes itself raise no warnings."""
from converter.batch_convert import NOTE_WIDTH, Options, convert_one, exit_code, summary_table
from quantized_cases import dynamic_model
from test_convert_cli import save


def test_dynamic_quantization_is_approximate_and_its_own_divs_warn_nothing(tmp_path):
    row = convert_one(str(save(dynamic_model(), tmp_path / "dyn.onnx")), Options())
    assert row["status"] == "ok" and row["approximate_nodes"] == 4, row
    assert not [w for w in row["warnings"] if "Div node" in w]      # int8_fallbacks says it once per node
    assert all("division" in why for why in row["int8_fallbacks"].values())
    refusal = "unsupported ONNX ops, nothing written: " + ", ".join(f"Foo ('node_{i}')" for i in range(120))
    rows = [row, {"model": "big.onnx", "status": "refused", "error": refusal, "seconds": 0.1},
            {"model": "plain.onnx", "status": "ok", "layers": 3, "seconds": 0.1, "approximate_nodes": 0}]
    lines = summary_table(rows)
    status = [line.split()[1] for line in lines[1:4]]
    assert status == ["approximate", "refused", "ok"]
    assert "4 dynamically quantized node(s) in float32: near onnxruntime, not equal" in lines[1]
    assert len(lines[2].split("0.10  ", 1)[1]) < NOTE_WIDTH + 60 < len(refusal)
    assert lines[2].endswith("more characters: --json, or convert it alone]") and "node_0" in lines[2]
    assert lines[-1] == "converted 2 of 3 models; 1 refused or failed; 1 of them approximate (dynamically quantized)"
    assert exit_code([rows[0], rows[2]]) == 0          # approximate is converted, not refused
