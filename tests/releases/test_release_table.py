"""converter/ncnn_side/releases.py against the real pip releases: each layer the table dates loads in
exactly the tested releases from its date on, and a string param (a shape expression) parses from
STRING_PARAMS on. Learned from ncnn's history; checked here in the runtimes themselves."""
from __future__ import annotations

import json
import subprocess

import pytest

from converter.ncnn_side.layers import SPECS
from converter.ncnn_side.releases import LAYERS, STRING_PARAMS, TESTED

# which layer types the runtime registers
LAYER_PROBE = "import json, sys, ncnn; print(json.dumps({t: ncnn.layer_to_index(t) >= 0 for t in sys.argv[1:]}))"
# whether a file with a string param loads: exit 0, or 1 when load_param fails (20240410 then also
# crashes tearing the net down, which counts as not loaded)
STRING_PROBE = "import os, sys, ncnn; net = ncnn.Net(); ok = net.load_param(sys.argv[1]) == 0; print(ok, flush=True); os._exit(0 if ok else 1)"


@pytest.mark.parametrize("release", TESTED)
def test_layers_exist_from_their_first_release(tmp_path, runtimes, release):
    layers = sorted(layer for layer in LAYERS if layer in SPECS)
    done = subprocess.run([str(runtimes[release]), "-c", LAYER_PROBE, *layers], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-500:]
    got = json.loads(done.stdout)
    wrong = {t: f"registered: {got[t]}, table says since {LAYERS[t]}" for t in layers if got[t] != (LAYERS[t] <= release)}
    assert not wrong, wrong


@pytest.mark.parametrize("release", TESTED)
def test_string_params_parse_from_their_first_release(tmp_path, runtimes, release):
    param = tmp_path / "expression.param"
    param.write_text('7767517\n2 2\nInput in 0 1 x 0=4 1=4 2=4\nReshape probe 1 1 x y 6="0w,0h,0c"\n')
    done = subprocess.run([str(runtimes[release]), "-c", STRING_PROBE, str(param)], capture_output=True, text=True,
                          timeout=300)
    assert (done.returncode == 0) == (STRING_PARAMS <= release), done.stderr[-300:]
