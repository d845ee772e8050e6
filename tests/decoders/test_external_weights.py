"""A model with large external data converts with its weights read from their files into the Graph
(converter/onnx_side/external_weights.py), giving the same files as when the data is loaded into the proto."""
from __future__ import annotations

import onnx

import converter
import converter.onnx_side.loader as loader
from converter.ncnn_side.writer import bin_bytes, param_text

from .genai_loop import MODELS


def test_lazy_external_weights_give_the_same_files(tmp_path, monkeypatch):
    proto = onnx.load(MODELS / "qwen2_int4.onnx")
    path = tmp_path / "m.onnx"
    onnx.save(proto, path, save_as_external_data=True, location="m.onnx.data", size_threshold=0)
    eager = converter.convert(str(path))
    monkeypatch.setattr(loader, "LARGE", 0)
    read_proto, _ = loader.read_model(path)
    assert loader.is_lazy(read_proto) and all(not t.raw_data for t in read_proto.graph.initializer)
    lazy = converter.convert(str(path))
    assert param_text(lazy.graph) == param_text(eager.graph)
    assert bin_bytes(lazy.graph) == bin_bytes(eager.graph)


def test_external_data_outside_the_folder_is_refused(tmp_path, monkeypatch):
    import pytest
    from converter.ir import ConversionError
    proto = onnx.load(MODELS / "qwen2_fp32.onnx")
    (tmp_path / "sub").mkdir()
    onnx.save(proto, tmp_path / "m.onnx", save_as_external_data=True, location="m.data", size_threshold=0)
    moved = onnx.load(tmp_path / "m.onnx", load_external_data=False)
    for t in moved.graph.initializer:
        for e in t.external_data:
            if e.key == "location":
                e.value = "../m.data"
    onnx.save(moved, tmp_path / "sub" / "m.onnx")
    monkeypatch.setattr(loader, "LARGE", 0)
    with pytest.raises(ConversionError, match="must be a file inside"):
        converter.convert(str(tmp_path / "sub" / "m.onnx"))
