"""ncnn's size expressions: the strings in Reshape 6=, Interp 9= and Crop 19/20/21.

An expression is a comma-separated list of prefix terms such as
`-1,*(0h,2),+(1c,2)`; `<k><w|h|d|c>` reads an extent of the layer's k-th input
blob. ncnn evaluates it by scanning tokens right to left with a stack, in
32-bit ints while both operands are ints and in float32 otherwise; each result
is truncated to an int. `evaluate` follows that exactly (so the interpreter
computes the sizes the runtime computes); `Expr` builds such strings for the
converter.
"""
from __future__ import annotations

import math
import re

import numpy as np

F32 = np.float32
INT32_MIN, INT32_MAX = -2**31, 2**31 - 1
_BLOB_REF = re.compile(r"^[0-9][whdcn]$")
_SEPARATORS = re.compile(r"[(),]")

# int op int stays int (C semantics: // truncates toward zero); anything with a float is float32
_INT_BINARY = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "//": lambda a, b: int(a / b) if abs(a) < 2**52 else a // b,
    "max": max, "min": min,
}
_FLOAT_OF_INT_BINARY = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "//": lambda a, b: np.floor(a / b), "max": lambda a, b: max(a, b), "min": lambda a, b: min(a, b),
}


def _remainder(a, b):
    r = np.fmod(a, b)
    return r + b if a * b < 0 else r


_FLOAT_BINARY = {
    "/": lambda a, b: a / b, "atan2": np.arctan2, "fmod": np.fmod, "pow": np.power,
    "remainder": _remainder, "logaddexp": lambda a, b: np.log(np.exp(a) + np.exp(b)),
}
_BITWISE = {"and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b,
            "lshift": lambda a, b: a << b, "rshift": lambda a, b: a >> b}
_SAME_TYPE_UNARY = {"abs": abs, "neg": lambda a: -a, "square": lambda a: a * a,
                    "sign": lambda a: type(a)((a > 0) - (a < 0))}
# C's round(): halves away from zero
_ROUNDING = {"trunc": math.trunc, "ceil": math.ceil, "floor": math.floor,
             "round": lambda a: math.copysign(math.floor(abs(a) + 0.5), a)}
_FLOAT_UNARY = {
    "acos": np.arccos, "acosh": np.arccosh, "asin": np.arcsin, "asinh": np.arcsinh,
    "atan": np.arctan, "atanh": np.arctanh, "cos": np.cos, "cosh": np.cosh, "exp": np.exp,
    "log": np.log, "log10": np.log10, "reciprocal": lambda a: F32(1) / a,
    "rsqrt": lambda a: F32(1) / np.sqrt(a), "sin": np.sin, "sinh": np.sinh, "sqrt": np.sqrt,
    "tan": np.tan, "tanh": np.tanh, "erf": lambda a: F32(math.erf(float(a))),
}


class ExpressionError(ValueError):
    """An expression ncnn would reject (or evaluate from garbage)."""


def tokens(expr: str) -> list[str]:
    return [t for t in _SEPARATORS.split(expr) if t]


def count_blobs(expr: str) -> int:
    """How many input blobs the expression reads: one more than the largest index."""
    return max((int(t[0]) + 1 for t in tokens(expr) if _BLOB_REF.match(t)), default=0)


_ARITY = {**{t: 2 for t in (*_INT_BINARY, *_FLOAT_BINARY, *_BITWISE)},
          **{t: 1 for t in (*_SAME_TYPE_UNARY, *_ROUNDING, *_FLOAT_UNARY)}}


def count_terms(expr: str) -> int:
    """How many values the list has (the output rank of a Reshape), without evaluating it."""
    depth = 0
    for t in reversed(tokens(expr)):
        arity = 0 if _BLOB_REF.match(t) else _ARITY.get(t, 0)
        if depth < arity:
            raise ExpressionError(f"expression {expr!r} has an operator without enough operands")
        depth += 1 - arity
    if depth == 0:
        raise ExpressionError(f"expression {expr!r} is empty")
    return depth


def blob_extent(shape: tuple[int, ...], axis: str) -> int:
    """ncnn's w/h/d/c of a blob given in numpy order (c, d, h, w); absent axes are 1.

    `n` (the batch count of batched Mats) is 1: this project's blobs carry no batch.
    """
    if axis == "n":
        return 1
    if len(shape) == 3:
        c, d, h, w = shape[0], 1, shape[1], shape[2]
    else:
        c, d, h, w = (1,) * (4 - len(shape)) + tuple(shape)
    return {"w": w, "h": h, "d": d, "c": c}[axis]


_SCAN_INT = re.compile(r"^\s*[+-]?\d+")
_SCAN_FLOAT = re.compile(r"^\s*[+-]?(?:inf(?:inity)?|nan|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)", re.I)


def _literal(token: str):
    """A literal as ncnn's two sscanf calls read it: an int when %d and %f agree, else a float."""
    as_int, as_float = _SCAN_INT.match(token), _SCAN_FLOAT.match(token)
    if as_float is None:
        raise ExpressionError(f"malformed literal token {token!r}")
    value = F32(float(as_float.group()))
    if as_int is not None and int(as_int.group()) == value:
        return int(as_int.group())
    return value


def _is_int(v) -> bool:
    return isinstance(v, int)


def _as_float(v) -> np.float32:
    return F32(v)


def evaluate(expr: str, shapes: list[tuple[int, ...]]) -> list[int]:
    """The integer list ncnn computes for `expr` given its input blobs' numpy-order shapes."""
    stack: list = []

    def pop():
        if not stack:
            raise ExpressionError(f"expression {expr!r} has an operator without enough operands")
        return stack.pop()

    with np.errstate(all="ignore"):
        for t in reversed(tokens(expr)):
            if _BLOB_REF.match(t):
                index = int(t[0])
                if index >= len(shapes):
                    raise ExpressionError(f"expression {expr!r} reads blob {index}, "
                                          f"but the layer has {len(shapes)} input(s)")
                stack.append(int(blob_extent(shapes[index], t[1])))
            elif t in _INT_BINARY:
                a, b = pop(), pop()
                if _is_int(a) and _is_int(b):
                    if t == "//" and b == 0:
                        raise ExpressionError(f"expression {expr!r} divides by zero")
                    stack.append(int(_INT_BINARY[t](a, b)))
                else:
                    stack.append(F32(_FLOAT_OF_INT_BINARY[t](_as_float(a), _as_float(b))))
            elif t in _SAME_TYPE_UNARY:
                a = pop()
                stack.append(_SAME_TYPE_UNARY[t](a) if _is_int(a) else F32(_SAME_TYPE_UNARY[t](a)))
            elif t in _ROUNDING:
                a = pop()
                stack.append(a if _is_int(a) else _c_int(_ROUNDING[t](float(a))))
            elif t in _FLOAT_UNARY:
                stack.append(F32(_FLOAT_UNARY[t](_as_float(pop()))))
            elif t in _FLOAT_BINARY:
                a, b = pop(), pop()
                stack.append(F32(_FLOAT_BINARY[t](_as_float(a), _as_float(b))))
            elif t in _BITWISE:
                a, b = pop(), pop()
                stack.append(_BITWISE[t](int(a), int(b)))
            else:
                stack.append(_literal(t))
    if not stack:
        raise ExpressionError(f"expression {expr!r} is empty")
    return [v if _is_int(v) else _c_int(v) for v in reversed(stack)]


def _c_int(v) -> int:
    """C's float-to-int conversion: truncation toward zero."""
    v = float(v)
    if not math.isfinite(v):
        raise ExpressionError(f"expression value {v} is not a finite size")
    return int(v)


# ---- building expressions ---------------------------------------------------------

class Expr:
    """A term of an ncnn expression, built with Python operators: `Expr.ref(0, "w") * 2 + 1`.

    Integer constants fold, so a term that needs no blob is just a number (`.is_const`).
    Division by an int is `//` (truncating, as ncnn's int op); `/` gives a float term.
    """

    def __init__(self, text: str, value: int | None = None):
        self.text, self.value = text, value

    @staticmethod
    def ref(blob: int, axis: str) -> "Expr":
        if not 0 <= blob <= 9 or axis not in "whdc":
            raise ValueError(f"no ncnn reference for blob {blob} axis {axis!r}")
        return Expr(f"{blob}{axis}")

    @staticmethod
    def const(value: int) -> "Expr":
        # ncnn reads a literal with sscanf("%d") and computes in C ints: a wider one reads as garbage
        if not INT32_MIN <= int(value) <= INT32_MAX:
            raise ExpressionError(f"the size term {int(value)} does not fit the 32-bit ints of an ncnn expression")
        return Expr(str(int(value)), int(value))

    @staticmethod
    def of(value: "Expr | int") -> "Expr":
        return value if isinstance(value, Expr) else Expr.const(value)

    @property
    def is_const(self) -> bool:
        return self.value is not None

    def _op(self, op: str, other, fold) -> "Expr":
        other = Expr.of(other)
        if self.is_const and other.is_const and fold is not None:
            return Expr.const(fold(self.value, other.value))
        return Expr(f"{op}({self.text},{other.text})")

    def __add__(self, o): return self._op("+", o, lambda a, b: a + b)
    def __sub__(self, o): return self._op("-", o, lambda a, b: a - b)
    def __mul__(self, o): return self._op("*", o, lambda a, b: a * b)
    def __floordiv__(self, o): return self._op("//", o, lambda a, b: int(a / b) if b else None)
    def __truediv__(self, o): return self._op("/", o, None)
    def __radd__(self, o): return Expr.of(o) + self
    def __rsub__(self, o): return Expr.of(o) - self
    def __rmul__(self, o): return Expr.of(o) * self

    def call(self, fn: str, *others) -> "Expr":
        """`fn(self, *others)`, e.g. `x.call("max", 1)` or `(x / 2).call("ceil")`."""
        return Expr(f"{fn}({','.join([self.text, *(Expr.of(o).text for o in others)])})")

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"Expr({self.text!r})"


def expression_list(terms: list["Expr | int"]) -> str:
    """The comma-separated list ncnn reads, outermost term first as written."""
    return ",".join(Expr.of(t).text for t in terms)
