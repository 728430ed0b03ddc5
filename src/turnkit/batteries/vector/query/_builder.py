"""The immutable query builder returned by ``vs(collection)``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import fields
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from turnkit._aio import on_loop, run_sync, sync_form
from turnkit._checks import is_int, is_number
from turnkit.batteries.vector._errors import UnknownFieldError, VectorStoreUsageError
from turnkit.batteries.vector._matches import VectorMatch
from turnkit.batteries.vector.filters._ast import FilterNode
from turnkit.batteries.vector.filters._core import validate_field
from turnkit.batteries.vector.filters._where import Filterable
from turnkit.batteries.vector.query._ranking_specs import (
    DEFAULT_FUSION,
    DEFAULT_LAMBDA,
    DEFAULT_RRF_K,
    HybridSpec,
    MmrSpec,
)
from turnkit.batteries.vector.query._spec import MAX_LIMIT, NearId, NearText, NearVector, QuerySpec

if TYPE_CHECKING:
    # Only for type checking: query/ never imports store/ at run time (docs/architecture.md).
    from turnkit.batteries.vector.store._store import CollectionInfo, UpsertResult, VectorStore

__all__ = ["DEFAULT_PAGE_SIZE", "DEFAULT_SELECT", "QueryBuilder"]

DEFAULT_PAGE_SIZE = 1_000
"""Records `iter_rows` reads per page."""
_DEFAULT_LIMIT = QuerySpec(collection="_").limit
_invalid_query = partial(VectorStoreUsageError, code="E_VECTOR_STORE_INVALID_QUERY")
_SELECTABLE = ("id", "vector", "document", "metadata", "created_at", "updated_at", "score", "distance")
DEFAULT_SELECT: tuple[str, ...] = ("id", "document", "metadata")
"""What a search returns without ``select(...)`` (a near clause adds the score and distance)."""


def _positive_int(value: Any, name: str, *, minimum: int = 1, maximum: int | None = None) -> int:
    if not is_int(value, minimum):
        raise _invalid_query(f"{name}() takes an integer >= {minimum}, got {value!r}.")
    if maximum is not None and value > maximum:
        raise _invalid_query(f"{name}() takes at most {maximum}, got {value}.")
    return value


_SPEC_FIELD_ORDER = tuple(f.name for f in fields(QuerySpec))
_SPEC_FIELDS = frozenset(_SPEC_FIELD_ORDER)


class QueryBuilder(Filterable):
    """A query against one collection. Every method returns a new builder.

    Build with near clauses, filters, ``select`` and options, then run one of
    the terminals. Awaiting the builder runs the search; each terminal has a
    ``*_sync`` twin that also works inside a running event loop.

    ```python
    from turnkit.batteries.vector import HashEncoder, create_vector_store

    vs = create_vector_store(uri="memory://", encoder=HashEncoder())
    vs("docs").upsert_sync([{"id": "a", "document": "the cat sat", "metadata": {"kind": "faq"}}])
    q = vs("docs").near_text("cat").where("metadata.kind", "faq").select("id", "document").limit(3)
    print([m.id for m in q.search_sync()])
    #> ['a']
    ```
    """

    __slots__ = ("_filter", "_spec", "_store")

    def __init__(self, store: VectorStore, spec: QuerySpec) -> None:
        self._store = store
        self._spec = spec
        self._filter = spec.filter

    def _with(self, **changes: Any) -> QueryBuilder:
        # dataclasses.replace re-runs __init__ through keyword arguments: about 20 us, a tenth of
        # a search of a 1,000-row collection in memory. QuerySpec has no __post_init__ to skip.
        if not changes.keys() <= _SPEC_FIELDS:
            raise TypeError(f"QuerySpec has no fields {sorted(changes.keys() - _SPEC_FIELDS)}")
        old, spec = self._spec, object.__new__(QuerySpec)
        for name in _SPEC_FIELD_ORDER:
            object.__setattr__(spec, name, changes[name] if name in changes else getattr(old, name))
        return QueryBuilder(self._store, spec)

    def _with_filter(self, node: FilterNode | None) -> QueryBuilder:
        return self._with(filter=node)

    @property
    def spec(self) -> QuerySpec:
        """The compiled, inspectable query (no I/O)."""
        return self._spec

    @property
    def collection(self) -> str:
        """The collection this builder targets."""
        return self._spec.collection

    @property
    def store(self) -> VectorStore:
        """The store this builder searches."""
        return self._store

    def __repr__(self) -> str:
        return f"<QueryBuilder {self._spec.to_dict()!r}>"

    # -- near clauses -----------------------------------------------------------------
    def _near(self, near: NearText | NearVector | NearId) -> QueryBuilder:
        if self._spec.near is not None:
            raise VectorStoreUsageError(
                f"This query already has a near clause ({type(self._spec.near).__name__}); "
                f"cannot add {type(near).__name__}.",
                code="E_VECTOR_STORE_QUERY_CONFLICT",
                collection=self.collection,
            )
        return self._with(near=near)

    def near_text(self, text: str) -> QueryBuilder:
        """Search near the store encoder's vector for ``text``."""
        if not isinstance(text, str) or not text.strip():
            raise _invalid_query("near_text() needs a non-empty string.")
        return self._near(NearText(text))

    def near_vector(self, vector: Sequence[float] | np.ndarray[Any, Any]) -> QueryBuilder:
        """Search near ``vector`` (its length must match the collection's dimension)."""
        if (isinstance(vector, np.ndarray) and vector.dtype.kind == "b") or (
            isinstance(vector, Sequence) and len(vector) > 0 and isinstance(vector[0], bool | np.bool_)
        ):
            raise _invalid_query("near_vector() got booleans; it needs a vector of numbers.")
        try:
            array = np.asarray(vector, dtype=np.float64)
        except (TypeError, ValueError):
            raise _invalid_query("near_vector() needs a sequence of numbers.") from None
        if array.ndim != 1 or array.size == 0:
            raise _invalid_query(f"near_vector() needs a flat, non-empty vector, got shape {array.shape}.")
        with np.errstate(over="ignore"):
            frozen = array.astype(np.float32)
        if not np.isfinite(frozen).all():  # one check for both: NaN and inf survive the cast
            if not np.isfinite(array).all():
                raise _invalid_query("near_vector() got NaN or infinity.")
            raise _invalid_query("near_vector() got values too large for float32.")
        frozen.flags.writeable = False
        return self._near(NearVector(frozen))

    def near_id(self, record_id: str) -> QueryBuilder:
        """Search near the stored vector of the record ``record_id`` (which is itself a match)."""
        if not isinstance(record_id, str) or not record_id:
            raise _invalid_query("near_id() needs a non-empty record id.")
        return self._near(NearId(record_id))

    # -- projection and options ----------------------------------------------------------
    def select(self, *fields: str) -> QueryBuilder:
        """Choose the fields returned.

        ``"*"``, ``id``, ``vector``, ``document``, ``metadata``, ``metadata.<key>``,
        ``created_at``, ``updated_at`` (``score``/``distance`` always come with a
        near clause). Calling it again replaces the selection; without it a
        search returns ``id``, ``document`` and ``metadata`` (`DEFAULT_SELECT`).
        """
        if len(fields) == 1 and isinstance(fields[0], list | tuple):
            fields = tuple(fields[0])
        if not fields:
            raise _invalid_query("select() needs at least one field.")
        for name in fields:
            if not isinstance(name, str):
                raise _invalid_query(f"select() takes field names, not {type(name).__name__}.")
            if name == "*" or name in _SELECTABLE:
                continue
            if name.startswith("metadata."):
                validate_field(name)
                continue
            raise UnknownFieldError(
                f"Cannot select {name!r}.",
                hint='Select "*", "id", "vector", "document", "metadata", "metadata.<key>", '
                '"created_at" or "updated_at".',
                field=name,
            )
        return self._with(select=tuple(dict.fromkeys(fields)))

    def limit(self, n: int) -> QueryBuilder:
        """Return at most ``n`` matches (default 10, at most 10,000)."""
        return self._with(limit=_positive_int(n, "limit", maximum=MAX_LIMIT))

    def offset(self, n: int) -> QueryBuilder:
        """Skip the first ``n`` matches."""
        return self._with(offset=_positive_int(n, "offset", minimum=0, maximum=MAX_LIMIT))

    def min_score(self, score: float) -> QueryBuilder:
        """Keep matches whose similarity (in [0, 1]) is at least ``score``.

        With `hybrid` it reads each match's dense similarity (the score it has in
        a plain vector search), never the fused score, which only ranks.
        """
        if not is_number(score, 0.0, 1.0):
            raise _invalid_query(f"min_score() takes a number in [0, 1], got {score!r}.")
        return self._with(min_score=float(score))

    def max_distance(self, distance: float) -> QueryBuilder:
        """Keep matches whose raw metric distance is at most ``distance``."""
        if not is_number(distance, 0.0):
            raise _invalid_query(f"max_distance() takes a finite number >= 0, got {distance!r}.")
        return self._with(max_distance=float(distance))

    def nprobes(self, n: int) -> QueryBuilder:
        """IVF indexes: partitions to probe (more is slower and more exact)."""
        return self._with(nprobes=_positive_int(n, "nprobes", maximum=100_000))

    def refine_factor(self, n: int) -> QueryBuilder:
        """Re-rank ``n × limit`` candidates with exact distances (IVF_PQ needs this for recall)."""
        return self._with(refine_factor=_positive_int(n, "refine_factor", maximum=1_000))

    def ef(self, n: int) -> QueryBuilder:
        """HNSW indexes: candidate list size (more is slower and more exact)."""
        return self._with(ef=_positive_int(n, "ef", maximum=100_000))

    def prefilter(self, enabled: bool = True) -> QueryBuilder:
        """Filter before the vector search (default) or after it (may return fewer than ``limit``)."""
        if not isinstance(enabled, bool):
            raise _invalid_query("prefilter() takes True or False.")
        return self._with(prefilter=enabled)

    # -- ranking ------------------------------------------------------------------------
    def with_hybrid(self, spec: HybridSpec | None, text: str) -> QueryBuilder:
        """``hybrid(...)`` with ``spec``'s options and ``text`` as the full-text query.

        Args:
            spec: The hybrid options, as ``HybridSpec.from_option`` of a tool's or callback's option
                gives them; ``None`` returns this builder unchanged.
            text: The words the full-text leg matches.

        Returns:
            A new builder.
        """
        if spec is None:
            return self
        return self.hybrid(
            spec.alpha, fusion=spec.fusion, rrf_k=spec.rrf_k, text=text, candidates=spec.candidates
        )

    def hybrid(
        self,
        alpha: float | None = None,
        *,
        fusion: Literal["rrf", "linear", "zscore"] = DEFAULT_FUSION,
        rrf_k: int = DEFAULT_RRF_K,
        text: str | None = None,
        candidates: int | None = None,
    ) -> QueryBuilder:
        """Mix full-text (BM25 on ``document``) with the vector search; see docs/ranking.md.

        The full-text index is created on the first hybrid query. Both legs
        take the filter; ``min_score`` reads each match's dense similarity
        (never the fused score, which only ranks), ``max_distance`` the vector
        leg's distance. Calling it again replaces the options.

        Args:
            alpha: Weight of the vector leg in [0, 1] (Vertex's meaning: 0 is
                full-text only, 1 is vector only). ``None`` (default) picks it
                from the query's length: 0.2 up to 40 words (a lookup), 0.5 above
                (a passage).
            fusion: ``"zscore"`` (default: each leg's scores z-scored over both
                legs' candidates, blended by ``alpha``), ``"linear"`` (min-max
                normalized scores) or ``"rrf"`` (reciprocal rank fusion).
            rrf_k: RRF's rank offset.
            text: The full-text query; defaults to the ``near_text`` text
                (required with ``near_vector``/``near_id``).
            candidates: Matches per leg before fusing (default
                ``max(30, 3 × (limit + offset))``).
        """
        if text is not None and (not isinstance(text, str) or not text.strip()):
            raise _invalid_query("hybrid(text=...) needs a non-empty string.")
        try:
            spec = HybridSpec.checked(alpha, fusion, rrf_k, text, candidates)
        except ValueError as exc:
            raise _invalid_query(f"hybrid(): {exc}.") from None
        return self._with(hybrid=spec)

    def diversify(self, lambda_mult: float = DEFAULT_LAMBDA, *, fetch_k: int | None = None) -> QueryBuilder:
        """Re-pick the results by maximal marginal relevance (less repetition); see docs/ranking.md.

        Args:
            lambda_mult: In [0, 1]; 1 keeps the ranking order, lower values
                favour results unlike those already picked.
            fetch_k: Candidates fetched first (default ``max(20, 4 × (limit + offset))``).
        """
        try:
            return self._with(mmr=MmrSpec.checked(lambda_mult, fetch_k))
        except ValueError as exc:
            raise _invalid_query(f"diversify(): {exc}.") from None

    # -- terminals ----------------------------------------------------------------------
    def __await__(self) -> Generator[Any, None, list[VectorMatch]]:
        return self.search().__await__()

    async def search(self) -> list[VectorMatch]:
        """Run the search (or the filter scan, without a near clause).

        Without ``select(...)`` a match carries id, document, metadata and
        (with a near clause) its score and distance.

        Raises:
            FilterKeyNotFoundError: Nothing matched, and the filter needs a
                metadata key that no record of the collection holds (see
                docs/filters.md, "Keys no record holds").
        """
        return await self._store._execute(self._check_search())

    def _check_search(self) -> QuerySpec:
        spec = self._spec
        if spec.select is None:
            spec = self._with(select=DEFAULT_SELECT)._spec
        if (spec.hybrid is not None or spec.mmr is not None) and spec.near is None:
            raise _invalid_query(
                "hybrid() and diversify() rank a search; add near_text(), near_vector() or near_id().",
                collection=spec.collection,
            )
        if spec.hybrid is not None and spec.hybrid.text is None and not isinstance(spec.near, NearText):
            raise _invalid_query(
                "hybrid() with near_vector()/near_id() needs the full-text query: hybrid(text=...).",
                collection=spec.collection,
            )
        if spec.near is None:
            knobs = ("min_score", "max_distance", "nprobes", "refine_factor", "ef")
            given = [name for name in knobs if getattr(spec, name) is not None]
            if given:
                raise _invalid_query(
                    f"{', '.join(given)} only apply to a vector search; this query has no near clause, "
                    "so they would be ignored.",
                    hint="Add near_text(), near_vector() or near_id(), or drop those options.",
                    collection=spec.collection,
                )
        return spec

    def search_sync(self) -> list[VectorMatch]:
        """Sync form of `search`."""
        return self._store._execute_sync(self._check_search())

    async def upsert(
        self, records: Iterable[Mapping[str, Any]], *, guard: FilterNode | None = None
    ) -> UpsertResult:
        """Insert or replace whole records by id, in one commit.

        Records without a ``vector`` have their ``document`` encoded by the
        store's encoder, in batches. Every record is validated first; on any
        error nothing is written.

        Args:
            records: The records.
            guard: A tenant's write guard. Every record must match it, and
                ids are scoped by the guard: a record updates the row the
                guard sees under its id, else it is inserted in the guard's
                scope, even when another tenant holds the same id. Rows
                outside the guard are never read or changed, so the writer
                cannot learn whether an id is taken.
        """
        return await self._store._upsert(self._spec.collection, records, guard=guard)

    upsert_sync = sync_form(upsert)

    async def replace(self, records: Iterable[Mapping[str, Any]]) -> UpsertResult:
        """Make the records matching the filter exactly ``records``, in one commit.

        Upserts ``records`` and deletes every record the filter matches whose id
        is not among them: a document's chunks are swapped for its new chunks
        with no moment where both or neither are visible. Needs a filter (one
        that matches everything is refused, as for `delete`); the result counts
        ``deleted`` too.

        Example: ``vs("docs").where("metadata.source_uri", uri).replace(new_chunks)``.
        """
        self._filter_only("replace", paging=True)
        return await self._store._upsert(self._spec.collection, records, replace=self._spec)

    replace_sync = sync_form(replace)

    def _filter_only(self, terminal: str, *, paging: bool = False) -> None:
        spec = self._spec
        extra = ["a near clause"] if spec.near is not None else []
        if paging and (spec.limit != _DEFAULT_LIMIT or spec.offset):
            extra.append("limit/offset")
        if extra:
            raise _invalid_query(
                f"{terminal}() works on the filter alone; {' and '.join(extra)} would be ignored.",
                hint=f"Search first, then {terminal} by id: vs(c).where_in('id', [m.id for m in matches]).",
                collection=spec.collection,
            )

    async def delete(self, *, all: bool = False) -> int:
        """Delete the records matching the filter; returns how many were removed.

        Without a filter this raises `VectorStoreUsageError` (``E_VECTOR_STORE_UNSAFE_DELETE``) unless
        ``all=True``.
        A near clause, ``limit`` or ``offset`` would not narrow a delete, so
        they are refused rather than ignored.
        """
        self._filter_only("delete", paging=True)
        return await on_loop(self._store._delete(self._spec, all_records=all))

    delete_sync = sync_form(delete)

    async def count(self) -> int:
        """Count the records matching the filter (all records without one)."""
        self._filter_only("count")
        return await on_loop(self._store._count(self._spec))

    count_sync = sync_form(count)

    async def get(self, ids: Iterable[str] | None = None, *, where: Any = None) -> list[VectorMatch]:
        """Fetch records by id, in the order given, or every record a filter matches, in id order.

        With ``ids``, missing ids are skipped (an id longer than any record's,
        1,024 characters, is simply not found), and an id asked for twice is
        returned once, where it was first asked for (``get(["a", "a", "b"])``
        gives ``a, b``). Without ``ids``, every record the builder's filter and
        ``where`` match comes back, read page by page as `iter_rows` does;
        prefer `iter_rows` for a large collection, which holds one page at a time.

        Args:
            ids: The ids to fetch; ``None`` for every record the filter matches.
            where: A filter ANDed with the builder's, in any form `where` takes
                (``{"metadata.kind": "faq"}``, a filter node, a callable group).

        Uses the builder's ``select`` (default: every field but ``vector``).
        """
        query = self if where is None else self.where(where)
        if ids is None:
            return [match async for match in query.iter_rows()]
        id_list = list(ids) if not isinstance(ids, str) else [ids]
        for rid in id_list:
            if not isinstance(rid, str) or not rid:
                raise _invalid_query(f"get() takes non-empty string ids, got {rid!r}.")
        return await on_loop(self._store._get(query._spec, id_list))

    get_sync = sync_form(get)

    def _paging(self, page_size: int) -> int:
        self._filter_only("iter_rows", paging=True)
        return _positive_int(page_size, "iter_rows(page_size=...)", maximum=MAX_LIMIT)

    def iter_rows(self, *, page_size: int = DEFAULT_PAGE_SIZE) -> AsyncIterator[VectorMatch]:
        """Every record the filter matches (all of them without one), in id order, a page at a time.

        Not capped like `limit`: pages of ``page_size`` records are read as
        the iteration goes, so memory holds one page. The records are those of
        the collection's version when the iteration starts; writes made
        meanwhile are not seen, and each id comes once. Uses the builder's
        ``select`` (default: every field but ``vector``).

        ```python
        from turnkit.batteries.vector import HashEncoder, create_vector_store

        vs = create_vector_store(uri="memory://", encoder=HashEncoder(8))
        vs("log").upsert_sync([{"id": f"e{i:02d}", "document": f"event {i}"} for i in range(25)])
        ids = [m.id for m in vs("log").iter_rows_sync(page_size=10)]
        assert ids == sorted(ids) and len(ids) == 25
        ```
        """
        size = self._paging(page_size)

        async def rows() -> AsyncIterator[VectorMatch]:
            snapshot = await on_loop(self._store._rows_snapshot(self._spec))
            while page := await on_loop(self._store._rows_page(snapshot, size)):
                for match in page:
                    yield match

        return rows()

    def iter_rows_sync(self, *, page_size: int = DEFAULT_PAGE_SIZE) -> Iterator[VectorMatch]:
        """Sync form of `iter_rows`: a generator that reads the next page when it needs it."""
        size = self._paging(page_size)

        def rows() -> Iterator[VectorMatch]:
            snapshot = run_sync(self._store._rows_snapshot(self._spec))
            while page := run_sync(self._store._rows_page(snapshot, size)):
                yield from page

        return rows()

    async def update_metadata(
        self,
        updates: Mapping[str, Mapping[str, Any]],
        *,
        merge: bool = True,
        guard: FilterNode | None = None,
    ) -> int:
        """Give stored records new metadata, keeping their documents and vectors (nothing is encoded).

        One commit that only updates: an id with no record (or none the
        filter matches) is left out, never inserted. ``updated_at`` becomes
        the time of the write, ``created_at`` is kept.

        Args:
            updates: ``{id: metadata}``, each checked as an upsert checks a record's metadata.
            merge: ``True`` (default): the given keys replace those keys and the
                others are kept; ``False``: the given metadata replaces it whole.
            guard: A tenant's write guard, as for `upsert`: only a record the
                guard sees is updated (the one an upsert of that id behind the
                guard would update), and its new metadata must still match the guard.

        Returns:
            How many records were updated.
        """
        self._filter_only("update_metadata", paging=True)
        return await self._store._update_metadata(self._spec, updates, merge=merge, guard=guard)

    update_metadata_sync = sync_form(update_metadata)

    async def optimize(self) -> None:
        """Remove duplicate ids, compact small fragments and fold new rows into the indexes.

        Reads every row's id, so run it off the request path.
        """
        await on_loop(self._store._optimize(self._spec.collection))

    optimize_sync = sync_form(optimize)

    async def create_index(
        self,
        index_type: Literal["auto", "ivf_flat", "ivf_pq", "hnsw_sq"] = "auto",
        **params: Any,
    ) -> str:
        """Build a vector index; returns the index type built.

        ``"auto"`` picks by row count: an exhaustive ``ivf_flat`` (exact) up to
        50,000 rows, ``hnsw_sq`` beyond. Searches then default to knobs sized by
        the rows indexed (``ef`` for HNSW, ``refine_factor`` for PQ; see
        docs/store.md for the recall each gives). Extra ``params`` go to
        LanceDB's index config and override the automatic ones.
        """
        return await on_loop(self._store._create_index(self._spec.collection, index_type, params))

    create_index_sync = sync_form(create_index)

    async def info(self) -> CollectionInfo:
        """Facts about the collection (rows, dimension, metric, encoder, indexes)."""
        return await self._store.collection_info(self._spec.collection)

    info_sync = sync_form(info)
