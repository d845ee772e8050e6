"""The generated script as a user meets it (issue 24, item 9): named <stem>_ncnn.py for any stem,
reachable from Python as its docstring says, and a feed the files cannot take is one line."""
import subprocess
import sys

import numpy as np
from onnx import helper

from converter.cli import main
from onnx_cases import make_model
from test_convert_cli import save


def test_script_keeps_the_stem_and_a_wrong_width_is_one_line(tmp_path, capsys):
    """320n.onnx (a stem Python cannot import by name) gets 320n_ncnn.py; its input's width comes
    from the 6x4 weight, so a 9-wide feed is refused in one line instead of failing in reshape."""
    weight = np.random.default_rng(0).normal(size=(6, 4)).astype(np.float32)
    model = make_model([helper.make_node("MatMul", ["x", "w"], ["y"])], [("x", [1, "n"])], [("y", None)],
                       [("w", weight)])
    assert main(["convert", str(save(model, tmp_path / "320n.onnx"))]) == 0
    script = tmp_path / "320n_ncnn.py"
    assert script.is_file() and not (tmp_path / "m320n_ncnn.py").exists()
    assert str(script) in capsys.readouterr().out
    usage = next(line.strip() for line in script.read_text().splitlines() if "Model = " in line)
    np.save(tmp_path / "wide.npy", np.ones((1, 9), np.float32))
    np.save(tmp_path / "right.npy", np.ones((1, 6), np.float32))
    wide = subprocess.run([sys.executable, "-I", script, f"x={tmp_path / 'wide.npy'}"], capture_output=True, text=True)
    assert wide.returncode == 1 and "Traceback" not in wide.stderr, wide.stderr
    assert wide.stderr.strip() == "input 'x' has shape [1, 9]; these files take [1, 6] ('?': any size)"
    # the docstring's way in from Python, run where the script is (a child: real ncnn)
    code = f"{usage}\nimport numpy as np\nprint(Model().run({{'x': np.load('right.npy')}})['y'].shape)"
    right = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert right.returncode == 0 and right.stdout.strip() == "(1, 4)", right.stderr
