"""The only module that talks to LanceDB: lazy import, connection, error translation."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from turnkit._errors import TurnkitError
from turnkit.batteries.vector._errors import (
    CollectionNotFoundError,
    InvalidFilterError,
    VectorStoreRuntimeError,
    VectorStoreUsageError,
)

__all__ = ["import_lancedb", "translate_errors"]

_OPERATION_CODES: dict[str, str] = {
    "search": "E_VECTOR_STORE_SEARCH_FAILED",
    "upsert": "E_VECTOR_STORE_UPSERT_FAILED",
    "delete": "E_VECTOR_STORE_DELETE_FAILED",
}


def import_lancedb() -> Any:
    """Import lancedb on first use (it costs ~1.8 s, so ``import turnkit`` never does)."""
    try:
        import lancedb  # noqa: TID251 - this module is the one place allowed to
    except ImportError as exc:  # pragma: no cover - lancedb is a core dependency
        raise VectorStoreRuntimeError(
            "The vector battery needs the `lancedb` package.",
            code="E_VECTOR_STORE_DRIVER_UNAVAILABLE",
            hint="pip install turnkit",
            package="lancedb",
        ) from exc
    return lancedb


# LanceDB reports most conditions as ValueError/RuntimeError with a message;
# these patterns are pinned by tests against the installed version.
_NOT_FOUND = re.compile(r"Table '.*' was not found|TableNotFound|\btable\b[^\n]*\bnot found", re.IGNORECASE)
_EXISTS = re.compile(r"already exists", re.IGNORECASE)
_FILTER = re.compile(
    r"Error during planning|sql parser error|No field named|Invalid user input|does not return a boolean"
    r"|not supported SQL|Schema error|Failed to coerce|InvalidJsonPath|Failed to select JSONPath",
    re.IGNORECASE,
)


@contextmanager
def translate_errors(
    operation: str, collection: str | None = None, *, raw_filter: bool = False
) -> Iterator[None]:
    """Map LanceDB and pyarrow exceptions to turnkit errors, keeping the cause.

    Args:
        operation: ``search``, ``upsert``, ``delete`` or another name (collection
            management, maintenance).
        collection: Collection the operation touched, for the error's context.
        raw_filter: The query contains caller-written SQL, so planning errors
            are the caller's filter, not a turnkit bug.
    """
    try:
        yield
    except TurnkitError:
        raise
    except (ValueError, RuntimeError, OSError, NotImplementedError, KeyError) as exc:
        message = str(exc).strip().splitlines()[0][:500] if str(exc).strip() else type(exc).__name__
        if isinstance(exc, ValueError) and _EXISTS.search(message):
            raise VectorStoreUsageError(
                f"Collection {collection!r} already exists.",
                code="E_VECTOR_STORE_COLLECTION_EXISTS",
                collection=collection,
            ) from exc
        if isinstance(exc, ValueError) and _NOT_FOUND.search(message) and "field" not in message.lower():
            raise CollectionNotFoundError(
                f"Collection {collection!r} does not exist.", collection=collection
            ) from exc
        if raw_filter and _FILTER.search(message):
            raise InvalidFilterError(
                f"LanceDB rejected the raw filter: {message}",
                hint="Check the where_raw() SQL: single-quoted literals, `?` placeholders for values.",
                collection=collection,
            ) from exc
        raise VectorStoreRuntimeError(
            f"LanceDB failed during {operation}"
            + (f" on collection {collection!r}" if collection else "")
            + f": {type(exc).__name__}: {message}",
            code=_OPERATION_CODES.get(operation, "E_VECTOR_STORE_OPERATION_FAILED"),
            collection=collection,
            operation=operation,
        ) from exc
    except Exception as exc:  # pyarrow.ArrowException and anything unexpected
        import pyarrow as pa

        if isinstance(exc, pa.ArrowException):
            raise VectorStoreRuntimeError(
                f"Arrow failed during {operation}: {type(exc).__name__}: {exc}",
                code=_OPERATION_CODES.get(operation, "E_VECTOR_STORE_OPERATION_FAILED"),
                collection=collection,
                operation=operation,
            ) from exc
        raise
