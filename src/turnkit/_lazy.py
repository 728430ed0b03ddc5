"""Lazy package exports: a package's public names are imported on first use.

``turnkit query`` should not pay for pydantic models, the turn runner or the
agent glue it never touches. A package that uses this keeps its public names
in an ``if typing.TYPE_CHECKING:`` block of ``from … import …`` statements:
type checkers and readers see those imports, and at run time the same block,
read from the package's source, says which module holds each name. So there
is one list. The first access to a name imports its module and stores the
value on the package, so later accesses are plain attribute reads.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._errors import TurnkitError

__all__ = ["import_optional", "lazy_exports"]


def import_optional(
    name: str, error: Callable[..., TurnkitError], needs: str, hint: str, **context: Any
) -> Any:
    """Import the optional module ``name``, or raise ``error``: "``needs`` (why the import failed)"."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise error(f"{needs} ({exc}).", hint=hint, **context) from exc


def lazy_exports(package: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` for ``package``, from its TYPE_CHECKING imports.

    Args:
        package: The package's ``__name__``; its ``__init__.py`` is read once, here.
    """
    where = _type_checking_imports(sys.modules[package].__file__ or "")

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(where))

    return __getattr__, __dir__


def _type_checking_imports(path: str) -> dict[str, str]:
    """Name to module, for each ``from module import name`` under ``if typing.TYPE_CHECKING:``."""
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    where: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "typing.TYPE_CHECKING":
            for stmt in node.body:
                if not isinstance(stmt, ast.ImportFrom):
                    raise TypeError(f"{path}: the TYPE_CHECKING block may hold only 'from … import …'")
                module = "." * stmt.level + (stmt.module or "")
                where.update({alias.asname or alias.name: module for alias in stmt.names})
    return where
