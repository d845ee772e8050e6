"""Write OPS.md: where each ONNX op is lowered, which ncnn layers it emits, their kernels, its tests.

    python scripts/op_index.py [--check]

Found statically, so the index is cheap and deterministic:
- lowering: `converter.lowering.LOWERINGS` after `load_all()`, file:line of the function;
- emitted ncnn layers: string literals naming an ncnn layer type (a key of `SPECS`) in the
  lowering's body, followed into the lowering helpers it calls (any `converter.lowering` module,
  classes by all their methods) and into `LOWERINGS["Op"]` it delegates to. Literals that only
  test or pick (comparisons, subscripts, dict keys, f-strings, docstrings) do not count;
- kernel: the source file of `KERNELS[type].fn`;
- tests: test files outside tests/interpreter, tests/reader (those feed ncnn layers, not
  ONNX ops) and tests/structure holding the op name as a whole string literal (make_node("Add", ...), a
  parametrize list of op names, ...) or naming onnx node cases of it (test_rms_normalization...).
`--check` exits 1 when the committed OPS.md differs from what would be written.
"""
from __future__ import annotations

import argparse
import ast
import inspect
import re
import sys
import textwrap
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from converter.interpreter import kernels as _kernels  # noqa: E402,F401  (registers the kernels)
from converter.interpreter.registry import KERNELS  # noqa: E402
from converter.lowering import LOWERINGS, load_all  # noqa: E402
from converter.ncnn_side import layers as ncnn_layers  # noqa: E402
from converter.ncnn_side.layers import SPECS  # noqa: E402

OUTPUT = ROOT / "OPS.md"
LOWERING_PACKAGE = "converter.lowering"
# not tests of ONNX ops: these build ncnn layers directly, or check the code's structure
NOT_OP_TESTS = ("tests/interpreter/", "tests/reader/", "tests/structure/")
# test directories closest to one op first; the table lists this many files, then a count
TEST_ORDER = ("tests/lowering/", "tests/passes/", "tests/conversion/", "tests/loading/", "tests/cli/")
SHOWN_TESTS = 6


def rel(path: str | Path) -> str:
    return Path(path).resolve().relative_to(ROOT).as_posix()


def _syntax(obj) -> ast.AST:
    return ast.parse(textwrap.dedent(inspect.getsource(obj)))


def _ignored(tree: ast.AST) -> set[int]:
    """ids of string constants that only test or pick: comparisons, subscripts, dict keys,
    OpTable register() keys, f-string parts, docstrings."""
    skip: set[ast.AST] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Compare, ast.JoinedStr)):
            skip.update(ast.walk(node))
        elif isinstance(node, ast.Subscript):
            skip.update(ast.walk(node.slice))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "register":
            for arg in node.args:        # an OpTable's keys pick ops, as dict keys do
                skip.update(ast.walk(arg))
        elif isinstance(node, ast.Dict):
            for key in node.keys:
                skip.update(ast.walk(key) if key is not None else ())
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            skip.add(node.value)
    return {id(n) for n in skip}


def layer_literals(tree: ast.AST) -> set[str]:
    ignored = _ignored(tree)
    return {n.value for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in SPECS
            and id(n) not in ignored}


def _in_lowering(obj) -> bool:
    return (inspect.isfunction(obj) or inspect.isclass(obj)) and \
        getattr(obj, "__module__", "").startswith(LOWERING_PACKAGE)


def _callees(obj, tree: ast.AST) -> list:
    """Lowering functions/classes this one calls by name, and lowerings it delegates to."""
    scope = vars(inspect.getmodule(obj))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and _in_lowering(scope.get(node.id)):
            found.append(scope[node.id])
        elif (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
              and node.value.id == "LOWERINGS" and isinstance(node.slice, ast.Constant)
              and node.slice.value in LOWERINGS):
            found.append(inspect.unwrap(LOWERINGS[node.slice.value]))
    return found


@lru_cache(maxsize=None)
def _own(obj) -> tuple[frozenset, tuple]:
    tree = _syntax(obj)
    return frozenset(layer_literals(tree)), tuple(c for c in _callees(obj, tree) if c is not obj)


def emitted_types(fn) -> list[str]:
    """ncnn layer types `fn` and the lowering code it reaches name (one walk, each callee once)."""
    seen, todo, types = {fn}, [fn], set()
    while todo:
        literals, callees = _own(todo.pop())
        types |= literals
        for callee in callees:
            if callee not in seen:
                seen.add(callee)
                todo.append(callee)
    return sorted(types)


def _string_literals(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def literals_by_test_file() -> dict[str, set[str]]:
    """test file (relative path) -> its whole string literals, for ONNX-level test files."""
    files = sorted(p for p in (ROOT / "tests").rglob("test_*.py")
                   if not rel(p).startswith(NOT_OP_TESTS))
    return {rel(p): _string_literals(p) for p in files}


def node_case_prefix(op: str) -> str:
    """onnx's node test cases are named test_<op in snake case>...: RMSNormalization -> test_rms_normalization."""
    return "test_" + re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", op).lower()


def _test_rank(path: str, op: str) -> tuple[int, bool, str]:
    """By directory, then files named after the op first (test_resize.py for Resize)."""
    folder = next((i for i, d in enumerate(TEST_ORDER) if path.startswith(d)), len(TEST_ORDER))
    return folder, node_case_prefix(op) not in Path(path).stem, path


def files_testing(op: str, mentions: dict[str, set[str]]) -> list[str]:
    """Test files naming the op, or one of onnx's node cases for it (test_<op>_...)."""
    prefix = node_case_prefix(op)
    found = [path for path, literals in mentions.items()
             if op in literals or any(s == prefix or s.startswith(prefix + "_") for s in literals)]
    return sorted(found, key=lambda path: _test_rank(path, op))


def where(fn) -> str:
    return f"{rel(inspect.getsourcefile(fn))}:{inspect.getsourcelines(fn)[1]}"


@lru_cache(maxsize=None)
def spec_lines() -> dict[str, int]:
    """ncnn layer type -> line of its `layer("Type", ...)` spec in ncnn_layers.py."""
    tree = ast.parse(Path(ncnn_layers.__file__).read_text())
    return {n.args[0].value: n.lineno for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "layer"
            and n.args and isinstance(n.args[0], ast.Constant)}


def spec_place(type_: str) -> str:
    line = spec_lines().get(type_)
    return f"{rel(ncnn_layers.__file__)}:{line}" if line else rel(ncnn_layers.__file__)


def kernel_file(type_: str) -> str | None:
    k = KERNELS.get(type_)
    return rel(inspect.getsourcefile(k.fn)) if k else None


def _cell(items) -> str:
    return ", ".join(items) if items else "—"


def _tests_cell(paths: list[str]) -> str:
    more = len(paths) - SHOWN_TESTS
    return _cell(paths[:SHOWN_TESTS]) + (f" (+{more} more)" if more > 0 else "")


def passes_naming() -> dict[str, list[str]]:
    """ncnn layer type -> pass files that name it as a layer literal (passes add layers too)."""
    named: dict[str, list[str]] = {}
    for path in sorted((ROOT / "passes").glob("*.py")):
        for type_ in sorted(layer_literals(ast.parse(path.read_text()))):
            named.setdefault(type_, []).append(path.stem)
    return named


def lowering_table() -> list[dict]:
    load_all()
    mentions = literals_by_test_file()
    rows = []
    for op in sorted(LOWERINGS):
        fn = inspect.unwrap(LOWERINGS[op])
        types = emitted_types(fn)
        rows.append({"op": op, "lowering": where(fn), "layers": types,
                     "kernels": sorted({k for k in map(kernel_file, types) if k}),
                     "tests": files_testing(op, mentions)})
    return rows


def layer_table(rows: list[dict]) -> list[dict]:
    emitters: dict[str, list[str]] = {}
    for row in rows:
        for type_ in row["layers"]:
            emitters.setdefault(type_, []).append(row["op"])
    named = passes_naming()
    return [{"layer": t, "spec": spec_place(t), "kernel": kernel_file(t), "emitted_by": emitters.get(t, []), "passes": named.get(t, [])}
            for t in sorted(SPECS)]


def render() -> str:
    rows = lowering_table()
    lines = ["# Op index", "",
             "Generated by `python scripts/op_index.py` (do not edit by hand; "
             "tests/structure/test_op_index.py checks it is current).", "",
             "Emitted layers are found statically (string literals naming an ncnn layer type in the",
             "lowering and the lowering helpers it calls), so a layer a pass adds later is not listed.",
             "Tests: ONNX-level test files holding the op name (or an onnx node case of it, test_<op>_...) as a",
             "string literal; lowering tests first.", "",
             "## ONNX ops", "",
             "| ONNX op | lowering | ncnn layers | kernels | tests |",
             "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['op']} | {r['lowering']} | {_cell(r['layers'])} | {_cell(r['kernels'])} "
                     f"| {_tests_cell(r['tests'])} |")
    lines += ["", "## ncnn layers the reader accepts", "",
              "| ncnn layer | spec | kernel | emitted by lowering of | named in passes/ |", "|---|---|---|---|---|"]
    for r in layer_table(rows):
        lines.append(f"| {r['layer']} | {r['spec']} | {r['kernel'] or '—'} | {_cell(r['emitted_by'])} | {_cell(r['passes'])} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if OPS.md is not current")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = OUTPUT.read_text() if OUTPUT.exists() else ""
        if current != text:
            print("OPS.md is out of date: run `python scripts/op_index.py`", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text)
    print(f"wrote {rel(OUTPUT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
