"""Graphs written by converter.ncnn_side.writer read back as the same layers, params and weights."""
import numpy as np
import pytest

from converter.ncnn_side.layers import FLOAT, FLOATS, SPECS
from converter.ncnn_side.reader import read_ncnn
from converter.ncnn_side.writer import save

GRAPH_NAMES = ["conv_net", "odd_net"]


def expected_params(node) -> dict:
    """The params as the reader returns them: float kinds as float32-rounded floats, arrays as tuples."""
    f32 = lambda v: float(np.float32(v))  # noqa: E731
    out = {}
    for pid, value in node.params.items():
        kind = SPECS[node.op].by_id[pid].kind
        if kind == FLOAT:
            value = f32(value)
        elif kind == FLOATS:
            value = tuple(map(f32, value))
        elif isinstance(value, (list, tuple)):
            value = tuple(value)
        out[pid] = value
    return out


@pytest.mark.parametrize("fp16", [False, True], ids=["fp32", "fp16"])
@pytest.mark.parametrize("name", GRAPH_NAMES)
def test_written_graph_reads_back(tmp_path, make_graph, name, fp16):
    graph = make_graph(name)
    save(graph, tmp_path / "m.param", tmp_path / "m.bin", fp16=fp16)
    back = read_ncnn(tmp_path / "m.param", tmp_path / "m.bin")

    assert list(back.nodes) == list(graph.nodes)
    assert back.inputs == graph.inputs and back.outputs == graph.outputs
    for node in graph.nodes.values():
        got = back.nodes[node.name]
        assert (got.op, got.inputs, got.outputs, got.ncnn) == (node.op, node.inputs, node.outputs, True)
        assert got.params == expected_params(node)
        assert len(got.weights) == len(node.weights)
        for w_spec, want, have in zip(SPECS[node.op].weight_layout(node.params), node.weights, got.weights):
            assert have.dtype == np.float32 and have.ndim == 1
            if fp16 and w_spec.tagged(SPECS[node.op].resolve(node.params)):
                want = want.astype(np.float16).astype(np.float32)
            np.testing.assert_array_equal(have, want)
    for blob in back.tensors.values():
        assert blob.shape is None


@pytest.mark.parametrize("fp16", [False, True], ids=["fp32", "fp16"])
@pytest.mark.parametrize("name", GRAPH_NAMES)
def test_read_then_write_is_byte_identical(tmp_path, make_graph, name, fp16):
    save(make_graph(name), tmp_path / "a.param", tmp_path / "a.bin", fp16=fp16)
    back = read_ncnn(tmp_path / "a.param", tmp_path / "a.bin")
    # the weights read back are fp32 now; fp16 re-rounding leaves them unchanged
    save(back, tmp_path / "b.param", tmp_path / "b.bin", fp16=fp16)
    assert (tmp_path / "b.param").read_text() == (tmp_path / "a.param").read_text()
    assert (tmp_path / "b.bin").read_bytes() == (tmp_path / "a.bin").read_bytes()


def test_fp16_file_is_smaller_and_pads_odd_counts(tmp_path, make_graph):
    graph = make_graph("odd_net")
    save(graph, tmp_path / "a.param", tmp_path / "a32.bin")
    save(graph, tmp_path / "a.param", tmp_path / "a16.bin", fp16=True)
    size32, size16 = (tmp_path / "a32.bin").stat().st_size, (tmp_path / "a16.bin").stat().st_size
    # InnerProduct's 15 flagged weights: 4 + 60 bytes as fp32, 4 + 30 + 2 padding as fp16
    assert size32 - size16 == 60 - 32
    assert read_ncnn(tmp_path / "a.param", tmp_path / "a16.bin").nodes["fc"].weights[0].size == 15
