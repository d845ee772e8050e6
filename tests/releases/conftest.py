import pytest

from .runtimes import all_releases


@pytest.fixture(scope="session")
def runtimes():
    """{release: the Python of a venv with that pip ncnn}, built by the first test that asks."""
    return all_releases()
