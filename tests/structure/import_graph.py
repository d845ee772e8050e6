"""The import graph of the library (converter/ and passes/), read from the source with ast."""
from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("converter", "passes")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def library_modules() -> dict[str, Path]:
    return {module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def _resolve(module: str, path: Path, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = package[:len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


@functools.lru_cache(maxsize=None)
def _import_statements(module: str, path: Path) -> tuple[tuple[str, tuple[str, ...], bool, bool], ...]:
    """(base module, imported names, from-import?, at module level?) per import statement: parsed
    once per file, since every structure test walks the same files."""
    tree = ast.parse(path.read_text())
    top = {id(n) for n in tree.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.append(("", tuple(a.name for a in node.names), False, id(node) in top))
        elif isinstance(node, ast.ImportFrom):
            found.append((_resolve(module, path, node), tuple(a.name for a in node.names), True, id(node) in top))
    return tuple(found)


def imports(module: str, path: Path, known: set[str]) -> list[tuple[str, bool]]:
    """(imported library module, at module level?) for each import in the file."""
    found = []
    for base, names, from_import, top in _import_statements(module, path):
        if from_import:
            names = tuple(f"{base}.{n}" if f"{base}.{n}" in known else base for n in names)
        found += [(name, top) for name in names]
    return found
