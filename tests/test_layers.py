"""Imports flow one way: no cycles between turnkit modules, no upward imports between layers.

The imports are read with ``ast`` (nothing is imported). Imports under ``if TYPE_CHECKING:``
are exempt; imports inside functions (lazy imports) count for both the layer rules and cycles:
a lazy import only hides a cycle until the function runs.
"""

from __future__ import annotations

import ast
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
VECTOR = "turnkit.batteries.vector"


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    line: int
    module_level: bool

    def __str__(self) -> str:
        path = self.importer.replace(".", "/")
        return f"{path}.py:{self.line} imports {self.imported}"


def _module_name(path: Path, src: Path = SRC) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(node: ast.AST, module_level: bool) -> Iterator[tuple[ast.AST, bool]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child):
            for orelse in child.orelse:
                yield from _walk_one(orelse, module_level)
            continue
        yield from _walk_one(child, module_level)


def _walk_one(node: ast.AST, module_level: bool) -> Iterator[tuple[ast.AST, bool]]:
    yield node, module_level
    inner = module_level and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
    yield from _walk(node, inner)


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base.pop()
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _known(name: str, modules: set[str]) -> str | None:
    """The longest turnkit module that ``name`` names (a name may be ``package.attribute``)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def _imports(src: Path = SRC) -> tuple[set[str], list[Import]]:
    # Parsed in a fresh thread: CPython 3.11's ast.parse can fail with "AST constructor recursion
    # depth mismatch" in a thread where an earlier test ran into a RecursionError.
    result: list[tuple[set[str], list[Import]]] = []
    worker = threading.Thread(target=lambda: result.append(_parse_imports(src)))
    worker.start()
    worker.join()
    return result[0]


def _parse_imports(src: Path) -> tuple[set[str], list[Import]]:
    files = sorted(src.joinpath("turnkit").rglob("*.py"))
    modules = {_module_name(f, src) for f in files}
    found: list[Import] = []
    for path in files:
        module = _module_name(path, src)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node, module_level in _walk(tree, True):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(module, path.name == "__init__.py", node)
                names = [f"{target}.{alias.name}" for alias in node.names] or [target]
            for name in names:
                if not name.startswith("turnkit"):
                    continue
                resolved = _known(name, modules)
                if resolved and resolved != module:
                    found.append(Import(module, resolved, node.lineno, module_level))
    return modules, found


def _in(module: str, *prefixes: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


OUTER = (
    "turnkit.batteries",
    "turnkit.tools",
    "turnkit.mcp",
    "turnkit.ingest",
    "turnkit.cli",
    "turnkit.integrations",
)
BATTERY_MAY_NOT = ("turnkit.tools", "turnkit.mcp", "turnkit.cli", "turnkit.ingest", "turnkit.integrations")
V = VECTOR
# Shared by every layer of the battery: its errors and its plain record/match types.
BOTTOM = (f"{V}._errors", f"{V}._matches")


def _violation(imp: Import) -> str | None:
    """Why this import goes against the layers, or ``None``."""
    src, dst = imp.importer, imp.imported
    core = src.startswith("turnkit._") or src == "turnkit"
    if core and src != "turnkit" and _in(dst, *OUTER):
        return "core imports an outer layer"
    if _in(src, V):
        if _in(dst, *BATTERY_MAY_NOT):
            return "the vector battery imports a surface"
        inner = {
            f"{V}.filters": (f"{V}.filters", *BOTTOM),
            f"{V}.query": (f"{V}.query", f"{V}.filters", *BOTTOM),
            f"{V}.encoders": (f"{V}.encoders", *BOTTOM),
            f"{V}.ranking": (f"{V}.ranking", f"{V}.query", f"{V}.filters", f"{V}.encoders", *BOTTOM),
            f"{V}.store": (
                f"{V}.store",
                f"{V}.ranking",
                f"{V}.filters",
                f"{V}.query",
                f"{V}.encoders",
                *BOTTOM,
            ),
        }
        for layer, allowed in inner.items():
            if _in(src, layer) and _in(dst, V) and not _in(dst, *allowed):
                names = ", ".join(a.rsplit(".", 1)[1] for a in allowed)
                return f"{layer.rsplit('.', 1)[1]}/ may import only {names}"
        if _in(src, *BOTTOM) and _in(dst, V) and not _in(dst, *BOTTOM):
            return "_errors/_matches import the battery"
    if _in(src, "turnkit.tools", "turnkit.mcp") and _in(dst, V) and dst != V:
        return "a surface imports a private path of the vector battery; import from turnkit.batteries.vector"
    return None


# Layer violations still in the tree, each to be removed by moving the code it needs.
# The test fails when one of these disappears, so that this list only ever shrinks.
KNOWN: set[tuple[str, str]] = set()


def test_no_upward_imports() -> None:
    _, imports = _imports()
    found = {(i.importer, i.imported): (i, why) for i in imports if (why := _violation(i))}
    new = [f"{i} ({why})" for key, (i, why) in sorted(found.items()) if key not in KNOWN]
    assert not new, "upward imports:\n  " + "\n  ".join(new)
    gone = sorted(KNOWN - found.keys())
    assert not gone, f"fixed, remove from KNOWN in tests/test_layers.py: {gone}"


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def _import_cycle(imports: list[Import]) -> list[str]:
    """The imports of one cycle (a package importing its own submodules is not one), or ``[]``."""
    graph: dict[str, set[str]] = {}
    lines: dict[tuple[str, str], Import] = {}
    for imp in imports:
        if not imp.imported.startswith(imp.importer + "."):
            graph.setdefault(imp.importer, set()).add(imp.imported)
            lines.setdefault((imp.importer, imp.imported), imp)
    cycle = _cycle(graph) or []
    return [str(lines[(a, b)]) for a, b in zip(cycle, cycle[1:], strict=False)]


def test_no_import_cycles() -> None:
    _, imports = _imports()
    described = _import_cycle(imports)
    assert not described, "import cycle:\n  " + "\n  ".join(described)


def test_the_checker_sees_violations() -> None:
    upward = Import(f"{V}.filters._core", f"{V}.store._records", 1, True)
    assert _violation(upward) is not None
    assert "filters" in str(_violation(upward))
    assert _cycle({"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]
    assert _violation(Import("turnkit.tools._x", f"{V}.filters._core", 1, True)) is not None
    assert _violation(Import("turnkit.tools._x", V, 1, True)) is None


def test_the_checker_sees_a_cycle_closed_inside_a_function(tmp_path: Path) -> None:
    """A cycle is found when one of its imports is lazy; imports for type checking alone are not one."""
    package = tmp_path / "turnkit" / "planted"
    package.mkdir(parents=True)
    (tmp_path / "turnkit" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("from turnkit.planted import _a\n")
    (package / "_a.py").write_text("from turnkit.planted._b import B\n")
    (package / "_b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from turnkit.planted._a import A\nB = 1\n"
    )
    _, imports = _imports(tmp_path)
    assert _import_cycle(imports) == []  # a package importing its submodule, and a TYPE_CHECKING import
    (package / "_b.py").write_text("def b():\n    from ._a import A\n\n    return A\n")
    _, imports = _imports(tmp_path)
    assert _import_cycle(imports) == [
        "turnkit/planted/_a.py:1 imports turnkit.planted._b",
        "turnkit/planted/_b.py:2 imports turnkit.planted._a",
    ]
