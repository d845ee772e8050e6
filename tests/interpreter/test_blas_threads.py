"""The interpreter runs BLAS on one thread unless ONNX2NCNN_BLAS_THREADS says otherwise."""
import pytest
from threadpoolctl import threadpool_info

from converter.interpreter.blas_threads import ENV, blas_threads


def _blas_threads() -> set[int]:
    return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}


@pytest.mark.parametrize("setting,expected", [(None, {1}), ("2", {2}), ("junk", {1})])
def test_limit_inside_a_run(monkeypatch, setting, expected):
    if setting is None:
        monkeypatch.delenv(ENV, raising=False)
    else:
        monkeypatch.setenv(ENV, setting)
    with blas_threads():
        assert _blas_threads() == expected


def test_zero_leaves_blas_alone(monkeypatch):
    before = _blas_threads()
    monkeypatch.setenv(ENV, "0")
    with blas_threads():
        assert _blas_threads() == before
