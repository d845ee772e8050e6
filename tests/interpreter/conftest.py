import zlib

import numpy as np
import pytest

from converter.ncnn_runtime import available

if not available():
    pytest.skip("the real ncnn runtime is not installed", allow_module_level=True)


@pytest.fixture
def rng(request):
    """A generator seeded from the test id, so every parametrization gets its own stable data."""
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))
