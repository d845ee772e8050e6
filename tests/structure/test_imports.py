"""The library's import structure, measured from its source: no circles, no import back up a
floor, no imports hidden in functions (but optional dependencies), no file over 400 lines."""
from __future__ import annotations

import networkx as nx
import pytest

from .import_graph import library_modules, imports

# floors, lowest first; a module may import from its own floor or a lower one
FRONT = {"converter", "converter.__main__", "converter.api", "converter.batch_convert", "converter.cli",
         "converter.verification.check", "converter.verification.report", "converter.verification.verify_text",
         "converter.cli_parser", "converter.run_command"}
SIBLINGS = ("converter.lowering", "converter.interpreter")    # one floor, never importing each other
OPTIONAL = {"onnxruntime", "ncnn", "matplotlib", "PIL"}       # may be imported where they are used
MAX_LINES = 400

MODULES = library_modules()


def floor(module: str) -> int:
    if module in FRONT:
        return 3
    if module.startswith("passes"):
        return 2
    if module.startswith(SIBLINGS):
        return 1
    return 0


def sibling(module: str) -> str | None:
    return next((s for s in SIBLINGS if module == s or module.startswith(s + ".")), None)


def _edges(at_top: bool):
    known = set(MODULES)
    for module, path in MODULES.items():
        for target, top in imports(module, path, known):
            if top == at_top and target.split(".")[0] in ("converter", "passes"):
                yield module, target


def test_no_import_circle():
    graph = nx.DiGraph(_edges(at_top=True))
    # importing passes' converter.ir first runs the package converter: that counts as an import too
    # (inside one top package the package is already running, so its own modules do not count)
    for module, target in list(graph.edges):
        if module.split(".")[0] != target.split(".")[0]:
            graph.add_edge(module, target.split(".")[0])
    cycles = list(nx.simple_cycles(graph))
    assert not cycles, f"import circles: {cycles[:5]}"


def test_no_import_back_up_a_floor():
    wrong = [(m, t) for m, t in _edges(at_top=True) if t in MODULES and floor(t) > floor(m)]
    across = [(m, t) for m, t in _edges(at_top=True)
              if sibling(m) and sibling(t) and sibling(m) != sibling(t)]
    assert not wrong, f"imports from a higher floor: {wrong}"
    assert not across, f"lowering and interpreter import each other: {across}"


def test_imports_inside_functions_are_optional_dependencies_only():
    hidden = []
    for module, path in MODULES.items():
        for target, top in imports(module, path, set(MODULES)):
            if not top and target.split(".")[0] not in OPTIONAL:
                hidden.append((module, target))
    assert not hidden, f"imports inside functions: {hidden}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_library_file_over_400_lines(module):
    lines = MODULES[module].read_text().count("\n")
    assert lines <= MAX_LINES, f"{MODULES[module]} has {lines} lines"
