"""Written files get the mode a plain open() would give them under the user's umask."""
import os
import stat

import pytest

import converter
from onnx_cases import MODELS


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_output_files_follow_the_umask(tmp_path, umask, mode):
    model = converter.convert(MODELS / "bcast_demo.onnx")
    old = os.umask(umask)
    try:
        model.save(tmp_path / "m.param", tmp_path / "m.bin")
    finally:
        os.umask(old)
    for name in ("m.param", "m.bin", "m.json"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == mode, name
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.bin", "m.json", "m.param"]    # no temp file left
