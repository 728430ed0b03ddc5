"""What a query builder runs its terminals on: the store side of `QueryBuilder`, as one protocol.

``query/`` sits below ``store/`` and never imports it; a builder reaches the
store only through these methods, which `VectorStore` implements (mypy checks
it wherever a store makes a builder). A change to how a spec is executed
goes in ``store/``; a change to what a builder can ask for starts here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np

    from turnkit.batteries.vector._matches import VectorMatch
    from turnkit.batteries.vector.filters._ast import FilterNode
    from turnkit.batteries.vector.query._spec import QuerySpec
    from turnkit.batteries.vector.store._common import CollectionInfo, UpsertResult

__all__ = ["QueryExecutor"]


class QueryExecutor(Protocol):
    """The store methods a `QueryBuilder` calls (all run on turnkit's background loop)."""

    async def _search_now_async(self, spec: QuerySpec) -> list[VectorMatch] | None: ...

    def _search_now(self, spec: QuerySpec) -> list[VectorMatch] | None: ...

    async def _encode_query(self, collection: str, text: str) -> np.ndarray[Any, Any]: ...

    async def _search(self, spec: QuerySpec, vector: np.ndarray[Any, Any] | None) -> list[VectorMatch]: ...

    async def _check_filter_keys(self, spec: QuerySpec) -> None: ...

    async def _upsert(
        self,
        name: str,
        records: Iterable[Mapping[str, Any]],
        *,
        replace: QuerySpec | None = None,
        guard: FilterNode | None = None,
    ) -> UpsertResult: ...

    async def _delete(self, spec: QuerySpec, *, all_records: bool) -> int: ...

    async def _count(self, spec: QuerySpec) -> int: ...

    async def _get(self, spec: QuerySpec, ids: list[str]) -> list[VectorMatch]: ...

    async def _rows_snapshot(self, spec: QuerySpec) -> Any: ...

    async def _rows_page(self, snapshot: Any, page_size: int) -> list[VectorMatch]: ...

    async def _update_metadata(
        self, spec: QuerySpec, updates: Mapping[str, Any], *, merge: bool, guard: FilterNode | None
    ) -> int: ...

    async def _optimize(self, name: str) -> None: ...

    async def _create_index(self, name: str, index_type: str, params: Mapping[str, Any]) -> str: ...

    async def collection_info(self, name: str) -> CollectionInfo: ...
