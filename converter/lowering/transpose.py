"""Transpose -> ncnn Permute (its order_type codes over the ncnn axes; the batch axis must stay put)."""
from __future__ import annotations

from converter.ncnn_side.axes import AXIS_NAMES

from ..ir import Graph, Node
from . import lowers
from .common import fail, layer

# ---- Transpose -----------------------------------------------------------
# ncnn Permute order_type enumerations: each entry names, innermost output axis
# first, the input axis that output axis takes (permute.cpp's comments).
PERMUTE_ORDERS = {
    2: ("wh", "hw"),
    3: ("whc", "hwc", "wch", "cwh", "hcw", "chw"),
    4: ("whdc", "hwdc", "wdhc", "dwhc", "hdwc", "dhwc", "whcd", "hwcd", "wchd", "cwhd", "hcwd", "chwd",
        "wdch", "dwch", "wcdh", "cwdh", "dcwh", "cdwh", "hdcw", "dhcw", "hcdw", "chdw", "dchw", "cdhw"),
}


def _numpy_perm(rank: int, order: str) -> tuple[int, ...]:
    names = AXIS_NAMES[rank]
    return tuple(rank - 1 - names.index(n) for n in reversed(order))


ORDER_TYPE = {(rank, _numpy_perm(rank, order)): k
              for rank, orders in PERMUTE_ORDERS.items() for k, order in enumerate(orders)}


@lowers("Transpose")
def transpose(graph: Graph, node: Node) -> list[Node]:
    x, out = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    if x.shape is None:
        raise fail(node, graph, f"the rank of '{x.name}' is unknown")
    perm = [int(p) for p in node.attrs.get("perm") or reversed(range(x.rank))]
    if sorted(perm) != list(range(x.rank)):
        raise fail(node, graph, f"perm {perm} is not a permutation of the {x.rank} axes")
    expected = None if x.batch_axis is None else perm.index(x.batch_axis)
    if out.batch_axis != expected:
        raise fail(node, graph, f"perm {perm} moves the batch axis {x.batch_axis} to {expected}, but the "
                                f"output's batch axis is {out.batch_axis}; ncnn has no batch axis to move")
    ncnn_perm = tuple(x.ncnn_axis(p) for o, p in enumerate(perm) if o != out.batch_axis)
    if ncnn_perm == tuple(range(len(ncnn_perm))):
        return [layer(node, graph, "Noop", [x.name], [out.name])]
    if len(ncnn_perm) > 4:
        raise fail(node, graph, f"{len(ncnn_perm)} axes without the batch axis; ncnn holds at most 4")
    order = ORDER_TYPE[(len(ncnn_perm), ncnn_perm)]
    return [layer(node, graph, "Permute", [x.name], [out.name], {0: order})]


