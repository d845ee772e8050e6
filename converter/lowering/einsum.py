"""ONNX Einsum -> ncnn Reduction / Permute / Reshape / MatMul (one or two operands).

ncnn's own Einsum layer loops over every index in plain C (no SIMD, no blocking); the
patterns models use (attention scores "bhqd,bhkd->bhqk", "bij,bjk->bik", projections
"bsd,hd->bsh", transposes, sums) are batched matrix products. Letters are grouped:

    B  in both operands and the output   (batch axes, numpy-broadcast by MatMul)
    M  in the first operand and the output only      N  in the second and the output only
    K  in both operands, not the output  (contracted)

and the product is MatMul([B.., M, K], [B.., K, N]) -> [B.., M, N], with Transposes before
and after and Reshapes merging groups of several letters. A letter in one operand only and
not in the output is summed out first. A letter twice in the output and more than two
operands are refused.
"""
from __future__ import annotations

import numpy as np

from converter.shapes.einsum_equation import parse_equation

from ..ir import Graph, Node, Tensor
from . import lowers
from .common import fail, layer
from .onnx_steps import OnnxSteps as _Chain


def _sum_out(chain: _Chain, name: str, letters: str, keep: set[str]) -> tuple[str, str]:
    """Sum the letters of `name` not in `keep`."""
    gone = [i for i, c in enumerate(letters) if c not in keep]
    if not gone:
        return name, letters
    shape = tuple(d for i, d in enumerate(_shape(chain, name)) if i not in gone)
    out = chain.add("ReduceSum", [name], shape, {"keepdims": 0}, const=np.array(gone, np.int64))
    return out, "".join(c for i, c in enumerate(letters) if i not in gone)


def _pairwise(chain: _Chain, names: list[str], terms: list[str], out: str) -> list[Node]:
    """More than two operands: contracted left to right, each step keeping the letters a later
    operand or the output still reads (each step is a two-operand Einsum)."""
    extents = {c: d for n, t in zip(names, terms) for c, d in zip(t, _shape(chain, n))}
    acc, acc_letters = names[0], terms[0]
    for k in range(1, len(names)):
        later = set(out).union(*terms[k + 1:])
        both = acc_letters + "".join(c for c in terms[k] if c not in acc_letters)
        kept = out if k == len(names) - 1 else "".join(c for c in both if c in later)
        acc = chain.add("Einsum", [acc, names[k]], tuple(extents[c] for c in kept),
                        {"equation": f"{acc_letters},{terms[k]}->{kept}"})
        acc_letters = kept
    return chain.lower()


def _diagonal(chain: _Chain, name: str, letters: str) -> tuple[str, str]:
    """Each letter repeated in the term kept once: x * identity over its two axes, the second summed."""
    while len(set(letters)) != len(letters):
        c = next(c for c in letters if letters.count(c) > 1)
        i, j = letters.index(c), letters.index(c, letters.index(c) + 1)
        shape = _shape(chain, name)
        if shape[i] is None or shape[i] != shape[j]:
            raise fail(chain.node, chain.graph, f"the diagonal of letter '{c}' needs equal known extents, "
                                                f"got {shape[i]} and {shape[j]}")
        mask = np.zeros([shape[i] if a in (i, j) else 1 for a in range(len(shape))], np.float32)
        index = [slice(None) if a in (i, j) else 0 for a in range(len(shape))]
        index[i] = index[j] = np.arange(shape[i])
        mask[tuple(index)] = 1
        masked = chain.add("Mul", [name], shape, const=mask)
        name = chain.add("ReduceSum", [masked], tuple(d for a, d in enumerate(shape) if a != j), {"keepdims": 0},
                         const=np.array([j], np.int64))
        letters = letters[:j] + letters[j + 1:]
    return name, letters


def _shape(chain: _Chain, name: str) -> tuple:
    return chain.shape(name)


def _transpose(chain: _Chain, name: str, letters: str, order: str) -> str:
    if letters == order:
        return name
    shape = _shape(chain, name)
    perm = [letters.index(c) for c in order]
    return chain.add("Transpose", [name], tuple(shape[p] for p in perm), {"perm": perm})


def _reshape(chain: _Chain, name: str, shape: tuple) -> str:
    if tuple(_shape(chain, name)) == tuple(shape):
        return name
    if None in shape:
        raise fail(chain.node, chain.graph, "merging einsum axes of unknown extent; give static input shapes")
    return chain.add("Reshape", [name], tuple(shape), const=np.array(shape, np.int64))


def _product(extents: dict, letters: str) -> int | None:
    values = [extents[c] for c in letters]
    return None if None in values else int(np.prod(values, dtype=np.int64))


def _group(extents: dict, letters: str) -> tuple:
    """The extent of a letter group as one axis: its own extent for one letter, 1 for none."""
    return (extents[letters],) if len(letters) == 1 else (_product(extents, letters),)


@lowers("Einsum")
def einsum(graph: Graph, node: Node) -> list[Node]:
    operands = [graph.tensors[i] for i in node.inputs]
    if any(t.shape is None for t in operands):
        raise fail(node, graph, "an operand's rank is unknown")
    try:
        terms, out = parse_equation(node.attrs["equation"], [t.rank for t in operands])
    except ValueError as exc:
        raise fail(node, graph, f"equation '{node.attrs['equation']}': {exc}") from None
    if len(set(out)) != len(out):
        raise fail(node, graph, f"equation '{node.attrs['equation']}' repeats a letter in the output "
                                "(a diagonal written out), which has no ncnn form")
    chain = _Chain(graph, node)
    names = [t.name for t in operands]
    for k, term in enumerate(terms):
        names[k], terms[k] = _diagonal(chain, names[k], term)
    if len(names) > 2:
        return _pairwise(chain, names, terms, out)
    operands = [graph.tensors[n] if n in graph.tensors else Tensor(n, _shape(chain, n)) for n in names]
    if len(operands) == 1:
        name, letters = _sum_out(chain, operands[0].name, terms[0], set(out))
        name = _transpose(chain, name, letters, out)
        if not chain.steps:
            return [layer(node, graph, "Noop", [name], node.outputs[:1])]
        return chain.lower()
    (a, b), (ta, tb) = operands, terms
    a_name, ta = _sum_out(chain, a.name, ta, set(tb) | set(out))
    b_name, tb = _sum_out(chain, b.name, tb, set(ta) | set(out))
    batch = "".join(c for c in out if c in ta and c in tb)
    m = "".join(c for c in out if c in ta and c not in tb)
    n = "".join(c for c in out if c in tb and c not in ta)
    k = "".join(c for c in ta if c in tb and c not in out)
    ext_a = dict(zip(ta, _shape(chain, a_name)))
    ext_b = dict(zip(tb, _shape(chain, b_name)))
    a_name = _transpose(chain, a_name, ta, batch + m + k)
    b_name = _transpose(chain, b_name, tb, batch + k + n)
    a_batch = tuple(ext_a[c] for c in batch)
    b_batch = tuple(ext_b[c] for c in batch)
    a_name = _reshape(chain, a_name, a_batch + _group(ext_a, m) + _group(ext_a, k))
    b_name = _reshape(chain, b_name, b_batch + _group(ext_b, k) + _group(ext_b, n))
    merged = tuple(x if x != 1 else y for x, y in zip(a_batch, b_batch))
    product = chain.add("MatMul", [a_name, b_name], merged + _group(ext_a, m) + _group(ext_b, n))
    extents = {**ext_b, **ext_a, **dict(zip(batch, merged))}
    # when the product's axes must move, letters of extent 1 (a batch of one) wait for the last Reshape:
    # without them the moved axes fit ncnn's 4 where they might need 5, and no Permute moves a batch axis
    # that the product (its batch letters merged) no longer has
    moved = batch + m + n != out
    letters = "".join(c for c in batch + m + n if extents[c] != 1 or not moved) or batch + m + n
    result = _reshape(chain, product, tuple(extents[c] for c in letters))
    result = _transpose(chain, result, letters, "".join(c for c in out if c in letters))
    if letters != batch + m + n:
        _reshape(chain, result, tuple(extents[c] for c in out))
    return chain.lower()
