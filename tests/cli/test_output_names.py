"""The files convert writes can be named (issue 24, item 11): --param/--bin, pnnx's ncnnparam=/ncnnbin=,
and old onnx2ncnn's `onnx2ncnn MODEL.onnx OUT.param OUT.bin`; the record and the script follow the .param."""
import json
import subprocess
import sys

from converter.cli import main
from test_convert_cli import add_model, save


def test_three_ways_to_name_the_files(tmp_path, capsys):
    model = str(save(add_model(), tmp_path / "m.onnx"))
    (tmp_path / "out").mkdir()
    (tmp_path / "bins").mkdir()
    assert main([model, str(tmp_path / "out" / "old.param"), str(tmp_path / "out" / "old.bin")]) == 0
    assert main(["convert", model, f"ncnnparam={tmp_path / 'out' / 'pnnx.param'}"]) == 0
    assert main(["convert", model, "--param", str(tmp_path / "out" / "a.param"), "--bin",
                 str(tmp_path / "bins" / "b.bin"), "--json"]) == 0
    written = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "a.json", "a.param", "a_ncnn.py", "old.bin", "old.json", "old.param", "old_ncnn.py",
        "pnnx.bin", "pnnx.json", "pnnx.param", "pnnx_ncnn.py"]
    assert written["bin"] == str(tmp_path / "bins" / "b.bin") and written["json"] == str(tmp_path / "out" / "a.json")
    assert not (tmp_path / "m.ncnn.param").exists()
    # the script finds a .bin in another folder, from anywhere
    run = subprocess.run([sys.executable, "-I", tmp_path / "out" / "a_ncnn.py", "--check"],
                         capture_output=True, text=True, cwd=tmp_path / "bins")
    assert run.returncode == 0 and "ok " in run.stdout, run.stdout + run.stderr


def test_file_names_with_several_models_or_a_folder_are_one_line(tmp_path, capsys):
    model = str(save(add_model(), tmp_path / "m.onnx"))
    assert main(["convert", model, model, "--param", str(tmp_path / "x.param")]) == 2
    assert main(["convert", model, "-o", str(tmp_path), "--bin", str(tmp_path / "x.bin")]) == 2
    assert main(["convert", model, "--param", str(tmp_path / "x.param"), f"ncnnparam={tmp_path / 'y.param'}"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3 and all(line.startswith("onnx2ncnn: error: convert: ") for line in err), err
    assert "for several models use -o FOLDER" in err[0] and "not both" in err[1] and "both given" in err[2]
