"""Einsum equations: operand and output letters, with '...' spelled out (the lowering and the
batch-axis rule both read them)."""
from __future__ import annotations

import string

ELLIPSIS_LETTERS = string.ascii_uppercase


def parse_equation(equation: str, ranks: list[int]) -> tuple[list[str], str]:
    """Operand and output letter strings, with '...' replaced by upper-case letters (right-aligned)."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise ValueError(f"{len(terms)} operand terms for {len(ranks)} inputs")
    widest = max((r - len(t.replace("...", "")) for t, r in zip(terms, ranks) if "..." in t), default=0)
    filler = ELLIPSIS_LETTERS[:widest]
    expanded = []
    for term, rank in zip(terms, ranks):
        if "..." in term:
            n = rank - len(term.replace("...", ""))
            term = term.replace("...", filler[widest - n:] if n else "")
        if len(term) != rank:
            raise ValueError(f"term '{term}' does not match an operand of rank {rank}")
        expanded.append(term)
    if arrow:
        out = rhs.replace("...", filler)
    else:
        once = sorted(c for c in set("".join(expanded)) if "".join(expanded).count(c) == 1 and c.islower())
        out = filler + "".join(once)
    return expanded, out
