"""ncnn Permute: the order_type codes over 2-4 axes."""
from __future__ import annotations

import numpy as np

from ..registry import fail, kernel


@kernel("Permute")
def permute(p, weights, x):
    if x.ndim == 1:
        return x
    if x.ndim == 2:
        if p.order_type not in (0, 1):
            fail(f"Permute order_type {p.order_type} on a 2-D blob leaves ncnn's output empty")
        return x if p.order_type == 0 else np.ascontiguousarray(x.T)
    table, axes = (_PERMUTE_3D, "chw") if x.ndim == 3 else (_PERMUTE_4D, "cdhw")
    if not 0 <= p.order_type < len(table):
        fail(f"Permute order_type {p.order_type} is out of range for a {x.ndim}-D blob")
    order = [axes.index(name) for name in reversed(table[p.order_type])]
    return np.ascontiguousarray(x.transpose(order))


# each order_type lists the input axis that becomes output w, h, (d,) c - as in ncnn
_PERMUTE_3D = ["whc", "hwc", "wch", "cwh", "hcw", "chw"]


_PERMUTE_4D = ["whdc", "hwdc", "wdhc", "dwhc", "hdwc", "dhwc", "whcd", "hwcd", "wchd", "cwhd",
               "hcwd", "chwd", "wdch", "dwch", "wcdh", "cwdh", "dcwh", "cdwh", "hdcw", "dhcw",
               "hcdw", "chdw", "dchw", "cdhw"]


