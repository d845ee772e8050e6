"""The one idiom for per-op knowledge: a table from op (an ONNX op type or an ncnn layer type) to the
function that knows that op, filled by a decorator beside each function.

    RULES = OpTable("batch-axis rule")
    @RULES.register("Transpose")
    def transpose(graph, node, out): ...

Lowerings, batch-axis rules, axis-boundary rules, shape rules, extent rules (symbolic sizes), run-time size
expressions, window-gather steps and the interpreter's size guards are all OpTables; `RULES.get(op, default)` reads one."""
from __future__ import annotations

from typing import Callable, TypeVar

F = TypeVar("F", bound=Callable)


class OpTable(dict):
    def __init__(self, what: str):
        super().__init__()
        self.what = what          # what an entry is, for messages and tools ("lowering", "size guard")

    def register(self, *ops: str) -> Callable[[F], F]:
        """Enter `fn` for each op; an op entered twice is a mistake (the later entry would silently win),
        refused when the module defining the table is imported."""
        def add(fn: F) -> F:
            for op in ops:
                if op in self:
                    raise ValueError(f"{op} has two {self.what}s: {self[op].__name__} and {fn.__name__}")
                self[op] = fn
            return fn
        return add
