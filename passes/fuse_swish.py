"""Placeholder; see PIPELINE."""
from __future__ import annotations

from converter.ir import Graph


def fuse_swish(graph: Graph) -> dict:
    return {}
