"""Every public package lists exactly its public names, sorted, and imports stay light."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys
import types

import pytest

PACKAGES = ["turnkit", "turnkit.batteries.vector", "turnkit.ingest"]
OPTIONAL = ["turnkit.tools", "turnkit.mcp"]


def _packages() -> list[str]:
    found = list(PACKAGES)
    for name in OPTIONAL:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        found.append(name)
    return found


def _defined_public_names(module: types.ModuleType) -> set[str]:
    """Public classes, functions and constants the package pulls in from its own private modules."""
    for name in getattr(module, "__all__", ()):
        getattr(module, name)  # a lazy package binds a name on first use
    names = set()
    for name, obj in vars(module).items():
        if name.startswith("_") or inspect.ismodule(obj):
            continue
        origin = getattr(obj, "__module__", None)
        if origin is None:
            # Constants: count them when the package's own __all__ names them or they are upper case.
            if name.isupper():
                names.add(name)
            continue
        if origin.startswith(module.__name__ + "._") or origin == module.__name__:
            names.add(name)
    return names


@pytest.mark.parametrize("package", _packages())
def test_all_is_sorted_unique_and_resolves(package: str) -> None:
    module = importlib.import_module(package)
    exported = list(module.__all__)
    assert exported == sorted(exported)
    assert len(set(exported)) == len(exported)
    missing = [name for name in exported if not hasattr(module, name)]
    assert missing == []


@pytest.mark.parametrize("package", _packages())
def test_all_names_every_public_definition(package: str) -> None:
    module = importlib.import_module(package)
    unlisted = sorted(_defined_public_names(module) - set(module.__all__))
    assert unlisted == []


@pytest.mark.parametrize("package", _packages())
def test_star_import_gives_exactly_all(package: str) -> None:
    namespace: dict[str, object] = {}
    exec(f"from {package} import *", namespace)
    exported = sorted(importlib.import_module(package).__all__)
    assert sorted(k for k in namespace if k != "__builtins__") == exported


def test_the_public_surface_stays_small() -> None:
    """At most 140 distinct public names besides exceptions; with at most 40 exception classes, 180."""
    names: set[str] = set()
    for package in _packages():
        module = importlib.import_module(package)
        for name in module.__all__:
            obj = getattr(module, name)
            if not (isinstance(obj, type) and issubclass(obj, BaseException)):
                names.add(name)
    assert len(names) <= 140, f"{len(names)} public names besides exceptions"


@pytest.mark.parametrize(
    "statement",
    ["import turnkit", "import turnkit.batteries.vector", "import turnkit.ingest"],
)
def test_import_does_not_load_lancedb(statement: str) -> None:
    code = f"import sys; {statement}; print('lancedb' in sys.modules, 'mcp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_errors_carry_codes_and_hints() -> None:
    for package in _packages():
        _defined_public_names(importlib.import_module(package))
    from turnkit import ERROR_CODES, TurnkitError

    assert len(ERROR_CODES) >= 40
    for code, cls in ERROR_CODES.items():
        assert issubclass(cls, TurnkitError)
        assert code.startswith("E_") and code.upper() == code
        assert cls.hints[code].strip(), f"{code} ({cls.__name__}) has no default hint"
        assert cls.code == next(iter(cls.hints)), "a class's own code is the first it lists"


def test_an_error_refuses_a_code_its_class_does_not_carry() -> None:
    from turnkit import UsageError
    from turnkit.batteries.vector import VectorStoreUsageError

    err = VectorStoreUsageError("bad limit", code="E_VECTOR_STORE_INVALID_QUERY")
    assert (err.code, err.hint) == ("E_VECTOR_STORE_INVALID_QUERY", VectorStoreUsageError.hints[err.code])
    assert VectorStoreUsageError("x").code == "E_VECTOR_STORE_USAGE"
    with pytest.raises(ValueError, match="does not carry"):
        UsageError("x", code="E_VECTOR_STORE_INVALID_QUERY")


_EXCEPTION_BASES = ("Error", "Exception", "Warning", "Failure", "Unsupported", "TooBig")


def test_error_classes_live_in_one_module_per_layer_and_stay_few() -> None:
    import ast
    from pathlib import Path

    import turnkit

    root = Path(turnkit.__file__).parent
    found: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            bases = [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases]
            if any(base.endswith(_EXCEPTION_BASES) for base in bases):
                found.setdefault(str(path.relative_to(root)), []).append(node.name)
    assert all(Path(module).name == "_errors.py" for module in found), found
    assert sum(map(len, found.values())) <= 40


LAZY_PACKAGES = ["turnkit", "turnkit.batteries.vector"]


def _type_checking_imports(module: types.ModuleType) -> dict[str, tuple[str, ...]]:
    """What the package's ``if TYPE_CHECKING:`` block imports: module name to names."""
    import ast

    assert module.__file__ is not None
    with open(module.__file__, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    found: dict[str, tuple[str, ...]] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "typing.TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom)
                found["." * imp.level + (imp.module or "")] = tuple(a.name for a in imp.names)
    return found


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_lazy_exports_match_the_type_checking_imports(package: str) -> None:
    """What type checkers see (the TYPE_CHECKING imports) is what runs (the export table), name for name."""
    code = f"import {package} as m; print(sorted(n for n in m.__all__ if n not in vars(m)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lazy_names = set(eval(out.stdout))
    module = importlib.import_module(package)
    declared = _type_checking_imports(module)
    assert lazy_names, "nothing is lazy"
    assert {n for names in declared.values() for n in names} == lazy_names
    for source, names in declared.items():
        target = (
            importlib.import_module(source, package)
            if source.startswith(".")
            else importlib.import_module(source)
        )
        for name in names:
            assert getattr(module, name) is getattr(target, name), name
    with pytest.raises(AttributeError, match="no attribute"):
        module.__getattr__("NotAThing")  # type: ignore[operator]
    assert set(module.__all__) <= set(dir(module))


@pytest.mark.parametrize("statement", ["import turnkit", "import turnkit.batteries.vector"])
def test_import_does_not_load_pydantic_models_or_the_runner(statement: str) -> None:
    """The core's pydantic models and the turn runner are imported on first use, not by the package."""
    heavy = (
        "pydantic",
        "turnkit._retrievable",
        "turnkit._runner",
        "turnkit._prompt",
        "turnkit.batteries.vector._callbacks",
        "turnkit.batteries.vector.store._store",
    )
    code = f"import sys; {statement}; print(sorted(m for m in {heavy!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
