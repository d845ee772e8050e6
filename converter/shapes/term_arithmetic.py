"""Arithmetic on run-time size terms (converter/shapes/symbolic.py): products, quotients, numpy's
broadcast rule and a term's number once its symbols have sizes."""
from __future__ import annotations

from converter.shapes.symbolic import Op, Ref, Term, op, refs

Dims = tuple[Term, ...]


def _factors(term: Term) -> tuple[int, list[Term]] | None:
    """term as coefficient * product of symbols, when it is one."""
    if isinstance(term, int):
        return term, []
    if isinstance(term, Op):
        if term.name != "*":
            return 1, [term]
        a, b = _factors(term.a), _factors(term.b)
        return None if a is None or b is None else (a[0] * b[0], a[1] + b[1])
    return 1, [term]


def product(coef: int, symbols: list[Term]) -> Term:
    result: Term = coef
    for s in sorted(symbols, key=repr):
        result = op("*", result, s)
    return result


def quotient(total: list[Term], known: list[Term]) -> Term | None:
    """prod(total) / prod(known) when the symbols cancel and the numbers divide, else None."""
    num, den = _factors(product(1, [t for t in total])), _factors(product(1, [t for t in known]))
    if num is None or den is None or den[0] == 0 or num[0] % den[0]:
        return None
    rest = list(num[1])
    for s in den[1]:
        if s not in rest:
            return None
        rest.remove(s)
    return product(num[0] // den[0], rest)


def broadcast(shapes: list[Dims]) -> Dims:
    """numpy's rule over terms; an axis where two different symbols meet (either could be 1) is
    None, unknown, unless they are formulas of the same extents: then the larger (equal, or one is 1),
    so that an FPN level's sum of a lateral conv and a resized coarser level still reads the input's H."""
    rank = max(len(s) for s in shapes)
    result = []
    for axis in range(rank):
        seen = {s[axis - rank + len(s)] for s in shapes if axis - rank + len(s) >= 0} - {1}
        numbers = {t for t in seen if isinstance(t, int)}
        result.append(None if None in seen else numbers.pop() if numbers
                      else _larger(sorted(seen, key=repr)) if len(seen) > 1 else seen.pop() if seen else 1)
    return tuple(result)


def _larger(terms: list[Term]) -> Term | None:
    reads = {frozenset(refs(t)) for t in terms}
    if len(reads) != 1 or not next(iter(reads)):
        return None
    result = terms[0]
    for t in terms[1:]:
        result = op("max", result, t)
    return result


def evaluate(term: Term, sizes: dict[Ref, int]) -> int | None:
    """The number a term takes when each symbol has the size `sizes` gives it."""
    if isinstance(term, int):
        return term
    if isinstance(term, Ref):
        return sizes.get(term)
    a, b = evaluate(term.a, sizes), evaluate(term.b, sizes)
    if a is None or b is None:
        return None
    if term.name == "//":       # ONNX's integer Div and ncnn's expressions truncate toward zero
        return None if b == 0 else abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
    return {"+": a + b, "-": a - b, "*": a * b, "max": max(a, b), "min": min(a, b)}[term.name]


def symbols(dims: Dims) -> set[Term]:
    """The symbols (non-numbers that are not products) a tuple of terms reads."""
    found: set[Term] = set()
    for t in dims:
        f = _factors(t)
        found.update(s for s in (f[1] if f else [t]) if not isinstance(s, int))
    return found


def numel(dims: Dims) -> Term:
    return product(1, list(dims)) if dims else 1
