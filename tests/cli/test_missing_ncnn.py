"""verify --backend ncnn without the ncnn package: a missing optional dependency, said in one line."""
import subprocess
import sys

import pytest

from onnx_cases import MODELS

# sys.modules[name] = None makes `import ncnn` raise ImportError, as on a machine without it
WITHOUT_NCNN = ("import sys; sys.modules['ncnn'] = None; from converter.cli import main; "
                "sys.exit(main(sys.argv[1:]))")


@pytest.mark.parametrize("backend", ["ncnn", "both"])
def test_missing_ncnn_names_the_install_command(backend):
    result = subprocess.run([sys.executable, "-c", WITHOUT_NCNN, "verify", str(MODELS / "bcast_demo.onnx"),
                             "--backend", backend], capture_output=True, text=True)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install ncnn" in lines[0] and "internal error" not in lines[0], lines
    assert result.stdout == ""
