import zlib

import numpy as np
import pytest

import ncnn  # noqa: F401  the real runtime is the judge: its absence fails, never skips


@pytest.fixture
def rng(request):
    """A generator seeded from the test id, so every parametrization gets its own stable data."""
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))
