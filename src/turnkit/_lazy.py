"""Lazy package exports: a package's public names are imported on first use.

``turnkit query`` should not pay for pydantic models, the turn runner or the
agent glue it never touches. A package that uses this keeps its public names
in an ``if TYPE_CHECKING:`` import block (what type checkers and readers see)
and the same names in an export table (what runs); a test checks the two
agree. The first access to a name imports its module and stores the value on
the package, so later accesses are plain attribute reads.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, Sequence[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` for ``package``.

    Args:
        package: The package's ``__name__``.
        exports: Relative module name (``"._context"``) to the public names it defines.
    """
    if any(isinstance(names, str) for names in exports.values()):
        raise TypeError("each module's names must be a tuple of strings, not one string")
    where = {name: module for module, names in exports.items() for name in names}

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
