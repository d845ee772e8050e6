"""ncnn StatisticsPooling: per-channel mean (and standard deviation) over time."""
from __future__ import annotations

import numpy as np

from ..registry import F32, kernel
from .scale import by_channel


@kernel("StatisticsPooling")
def statistics_pooling(p, weights, x):
    rows = by_channel(x)
    mean = rows.sum(axis=1, dtype=F32) / F32(rows.shape[1])
    if not p.include_stddev:
        return mean
    deviation = rows - mean[:, None]
    return np.concatenate([mean, np.sqrt((deviation * deviation).sum(axis=1, dtype=F32) / F32(rows.shape[1]))])


