"""The .bin is streamed to disk in chunks: still all files or none when a chunk fails mid-way."""
import pytest

from converter.ncnn_side.writer import write_atomically


def test_a_failing_chunk_stream_leaves_no_file(tmp_path):
    def chunks():
        yield b"\0" * 8
        raise ValueError("weight has 3 values")

    with pytest.raises(ValueError):
        write_atomically({tmp_path / "m.param": b"7767517\n", tmp_path / "m.bin": chunks()})
    assert list(tmp_path.iterdir()) == []


def test_chunks_of_any_bytes_like_kind_are_written_in_order(tmp_path):
    write_atomically({tmp_path / "m.bin": iter([b"ab", bytearray(b"cd"), memoryview(b"ef")])})
    assert (tmp_path / "m.bin").read_bytes() == b"abcdef"
