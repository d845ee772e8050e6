"""The one anchor walk the fusion passes share: a Rule's match/build pair applied over the graph.

A Rule names its anchor op types (the node every match starts from: an Erf for GELU, a Softmax
for attention), a `match(graph, anchor)` that returns a Match (the nodes to replace and what
build needs) or a Miss (one line: why this anchor is not the pattern; match may also raise it from
a helper), and a `build(graph, match)` that returns the nodes replacing the match's (it may also
edit the graph itself, as folding a scale into weights does). `apply(graph, rule)`:

  - walks the anchors once, in topological order (one snapshot: linear in graph size); an
    anchor an earlier rewrite of the same walk removed is skipped;
  - applies each match as it is found, so the next anchor sees the graph rewritten (a second
    scale after a folded one folds too), and two matches never claim the same node;
  - removes the tensors nothing reads any more once, after the walk, if anything fired;
  - returns {rule.stat: times fired}, the pass's stats.

A miss says why through the `onnx2ncnn.fusions` logger: at DEBUG each missed anchor's node and
reason, at INFO each pass's fire count. Nothing is shown by default (Python logging shows WARNING
and above); `onnx2ncnn convert --explain-fusions` or `logging.getLogger("onnx2ncnn.fusions")
.setLevel(logging.DEBUG)` with a handler turns it on (`explained(stream)` does both). The reasons are built only where a match
misses, so the quiet default costs no more than the walk.
"""
from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterable

from converter.ir import Graph, Node

LOG = logging.getLogger("onnx2ncnn.fusions")


class Miss(Exception):
    """Why an anchor is not the pattern, one line (returned or raised by a rule's match)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def need(ok: bool, reason: str) -> None:
    """Raise Miss(reason) unless `ok`: a match's checks read as a list of requirements."""
    if not ok:
        raise Miss(reason)


class Match:
    """The nodes a match replaces (removed after build), and whatever build needs, by keyword."""

    def __init__(self, nodes: Iterable[Node], **found):
        self.nodes = list(nodes)
        self.__dict__.update(found)


@dataclass(frozen=True)
class Rule:
    name: str                                   # the pass's name, as the explanation shows it
    stat: str                                   # the stats key counting fires ("gelu_fused")
    anchors: frozenset[str]                     # op types a match starts from
    match: Callable[[Graph, Node], "Match | Miss"]
    build: Callable[[Graph, Match], "list[Node] | None"]
    ncnn: bool = False                          # anchors are ncnn layers (else ONNX nodes)


def rule(name: str, stat: str, anchors: str | Iterable[str], match, build, ncnn: bool = False) -> Rule:
    return Rule(name, stat, frozenset([anchors] if isinstance(anchors, str) else anchors), match, build, ncnn)


def apply(graph: Graph, rule: Rule) -> dict:
    """Walk `rule`'s anchors once, replacing each match by what build gives; {rule.stat: fires}."""
    explain = LOG.isEnabledFor(logging.DEBUG)
    fired, misses = 0, []
    for anchor in graph.topological():
        if anchor.op not in rule.anchors or anchor.ncnn != rule.ncnn or graph.nodes.get(anchor.name) is not anchor:
            continue
        try:
            found = rule.match(graph, anchor)
        except Miss as miss:
            found = miss
        if isinstance(found, Miss):
            if explain:
                misses.append(f"  {anchor.op} '{anchor.name}': {found.reason}")
            continue
        new = rule.build(graph, found) or []
        graph.replace_nodes(found.nodes, new)
        fired += 1
    if fired:
        graph.remove_unused_tensors()
    if LOG.isEnabledFor(logging.INFO):
        LOG.info("%s: fired %d time%s%s", rule.name, fired, "" if fired == 1 else "s",
                 f", {len(misses)} anchor{'' if len(misses) == 1 else 's'} missed" if misses else "")
        for line in misses:
            LOG.debug("%s", line)
    return {rule.stat: fired}


@contextmanager
def explained(stream):
    """Inside: every fusion's fires and misses shown on `stream` (None: nothing changes). The CLI's
    --explain-fusions; the logger is as it was afterwards."""
    if stream is None:
        yield
        return
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(message)s"))
    level, propagate = LOG.level, LOG.propagate
    LOG.addHandler(handler)
    LOG.setLevel(logging.DEBUG)
    LOG.propagate = False
    try:
        yield
    finally:
        LOG.removeHandler(handler)
        LOG.setLevel(level)
        LOG.propagate = propagate
