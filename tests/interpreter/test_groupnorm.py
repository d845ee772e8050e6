"""InstanceNorm and GroupNorm against the real ncnn, every blob rank, affine or not."""
import numpy as np
import pytest

from converter.interpreter import InterpreterError

from .layer_check import check, ids, interpret

SHAPES = [(6, 5, 4), (16, 3, 7), (4, 2, 3, 5), (8, 3, 3, 3)]


@pytest.mark.parametrize("affine", [0, 1])
@pytest.mark.parametrize("shape", SHAPES + [(6, 9), (12,)], ids=str)
def test_instancenorm(tmp_path, rng, shape, affine):
    channels = shape[0] if len(shape) >= 3 else 1
    x = (rng.standard_normal(shape) * 3 + 1).astype(np.float32)
    weights = [rng.standard_normal(channels), rng.standard_normal(channels)] if affine else []
    check(tmp_path, "InstanceNorm", ids("InstanceNorm", channels=channels, eps=1e-5, affine=affine), [x],
          weights)


@pytest.mark.parametrize("affine", [0, 1])
@pytest.mark.parametrize("group", [1, 2, 4])
@pytest.mark.parametrize("shape", [(8, 5, 4), (16, 3, 7), (4, 2, 3, 5), (8, 9), (12,)], ids=str)
def test_groupnorm(tmp_path, rng, shape, group, affine):
    channels = shape[0]
    x = (rng.standard_normal(shape) * 2 - 1).astype(np.float32)
    weights = [rng.standard_normal(channels), rng.standard_normal(channels)] if affine else []
    check(tmp_path, "GroupNorm", ids("GroupNorm", group=group, channels=channels, eps=1e-4, affine=affine), [x],
          weights)


def test_groupnorm_rejects_ungroupable_channels():
    with pytest.raises(InterpreterError, match="6 channels in 4 groups"):
        interpret("GroupNorm", ids("GroupNorm", group=4, channels=6, affine=0), [np.zeros((6, 2, 2), np.float32)])
