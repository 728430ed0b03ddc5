"""`TurnkitStore`: LangGraph's ``BaseStore`` over one turnkit vector-store collection.

How an item is stored: one *head* row per item (id: a digest of namespace
and key) holding the value as exact JSON text, the namespace, timestamps and
TTL in its metadata, and the first embedded text's vector (a placeholder
when the item has none). Each further text the index paths yield is a *text*
row pointing at its head. A put writes a new generation of rows and then
deletes the generation it replaced, so a reader never pairs a head with
another put's vectors: rows of any other generation are ignored.
"""

from __future__ import annotations

import json
import time
import uuid
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from itertools import takewhile
from typing import Any, Final, Literal

import numpy as np
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    ensure_embeddings,
    get_text_at_path,
    tokenize_path,
    validate_op_namespace,
)

from turnkit._checks import is_int, is_number

from ... import TrustTier, validate_trust_tier
from ..._aio import run_sync
from ...batteries.vector import (
    CollectionNotFoundError,
    Encoder,
    EncoderRequiredError,
    FilterNode,
    VectorMatch,
    VectorStore,
    VectorStoreRuntimeError,
    VectorStoreUsageError,
    and_,
    condition,
    encode_texts,
    or_,
)
from .._common import batches, config_error, expect_store, invalid_query, record_error
from ._rules import (
    check_filter,
    check_page,
    item_id,
    json_text,
    matches_filter,
    namespace_matches,
    prefix_label,
    read_value,
    value_text,
)

__all__ = ["TurnkitStore"]

# Metadata keys kept as typed, indexed columns: every read and delete filters on them.
FIELDS: Final[dict[str, Any]] = {
    "lg_kind": str,
    "lg_item": str,
    "lg_gen": str,
    "lg_tenant": str,
    "lg_vec": bool,
    "lg_prefixes": list[str],
}
_CHUNK: Final = 1000  # puts per write: keeps each `in` list and commit small
_MAX_FETCH: Final = 10_000  # the builder's largest limit
_HEAD = condition("metadata.lg_kind", "eq", "item")
_encoder_failed = partial(VectorStoreRuntimeError, code="E_VECTOR_STORE_ENCODER_FAILED")
_dimension_mismatch = partial(VectorStoreUsageError, code="E_VECTOR_STORE_DIMENSION_MISMATCH")


def _now() -> float:
    """Seconds since the epoch: the clock TTLs count on (one place, so a test can move it)."""
    return time.time()


@dataclass(frozen=True)
class _Index:
    """What is embedded and how: LangGraph's ``embed`` or the turnkit store's encoder."""

    dims: int
    fields: tuple[tuple[str, str | list[str]], ...]
    documents: Callable[[list[str]], Awaitable[Any]]
    query: Callable[[str], Awaitable[Any]]


def _paths(fields: Any, option: str) -> tuple[tuple[str, str | list[str]], ...]:
    """Each index path with its tokens, once ``fields`` is checked to be a list of paths."""
    if (
        isinstance(fields, str)
        or not isinstance(fields, Sequence)
        or not all(isinstance(f, str) for f in fields)
    ):
        raise config_error(
            f"{option} must be a list of value paths, got {fields!r}.",
            hint='Examples: ["$"] (the whole value), ["text", "tags[*]", "meta.title"].',
            option=option,
        )
    return tuple((p, p if p == "$" else tokenize_path(p)) for p in fields)


class TurnkitStore(BaseStore):
    """A LangGraph store (``BaseStore``) kept in a turnkit vector-store collection.

    Pass it to ``graph.compile(store=...)``. Every operation of LangGraph's contract is
    supported, TTL with refresh on read included (see docs/integrations/langgraph.md).

    Args:
        store: A turnkit `VectorStore`; its location is where memories live.
        collection: The collection holding the items (created on first use).
        index: What to embed for semantic search: ``None`` (the whole value with the store's
            encoder, if it has one), ``False`` (no semantic index), or a LangGraph ``IndexConfig``
            (without ``embed``, the store's encoder embeds ``fields``).
        ttl: LangGraph's ``TTLConfig`` (minutes). Expired items are never returned; `sweep_ttl` deletes them.
        tenant_depth: How many leading namespace labels name the tenant (0: no tenants). Each
            tenant's rows are read and written behind its own guard; an operation naming no tenant is refused.
        trust_tier: The tier recorded on every row: what an agent wrote is not first-party, so
            turnkit's retrieval callbacks fence it as untrusted.
    """

    supports_ttl: bool = True

    def __init__(
        self,
        store: VectorStore,
        *,
        collection: str = "langgraph_store",
        index: IndexConfig | Literal[False] | None = None,
        ttl: TTLConfig | None = None,
        tenant_depth: int = 0,
        trust_tier: TrustTier = "third-party",
    ) -> None:
        expect_store(store)
        if not is_int(tenant_depth, 0):
            raise config_error(
                f"tenant_depth must be a non-negative integer, got {tenant_depth!r}.", option="tenant_depth"
            )
        if ttl is not None and not isinstance(ttl, Mapping):
            raise config_error("ttl must be a TTLConfig dict or None.", option="ttl")
        self.vs = store
        self.collection = collection
        self.tenant_depth = tenant_depth
        self.trust_tier: TrustTier = validate_trust_tier(trust_tier)
        self.ttl_config = TTLConfig(**ttl) if ttl is not None else None
        self._index = self._make_index(index)
        self.index_config: IndexConfig | None = (
            None
            if self._index is None
            else IndexConfig(dims=self._index.dims, fields=[p for p, _ in self._index.fields])
        )
        self._dimension: int | None = None
        store(collection)  # checks the name now

    def __repr__(self) -> str:
        return f"<TurnkitStore collection={self.collection!r} index={self.index_config!r} vs={self.vs!r}>"

    def _make_index(self, index: IndexConfig | Literal[False] | None) -> _Index | None:
        encoder = self.vs.encoder
        if index is False or (index is None and encoder is None):
            return None
        config: Mapping[str, Any] = {} if index is None else index
        if not isinstance(config, Mapping):
            raise config_error("index must be a LangGraph IndexConfig dict, False or None.", option="index")
        fields = _paths(config.get("fields") or ["$"], "index['fields']")
        embed, dims = config.get("embed"), config.get("dims")
        if embed is None:
            if encoder is None:
                raise EncoderRequiredError(
                    "index has no 'embed' and the turnkit store has no encoder.",
                    collection=self.collection,
                )
            if dims is not None and dims != encoder.dimension:
                raise _dimension_mismatch(
                    f"index['dims'] is {dims} but the store's encoder {encoder.name!r} "
                    f"gives {encoder.dimension}.",
                    collection=self.collection,
                )
            return _encoder_index(encoder, fields)
        if not is_int(dims, 1):
            raise config_error(
                f"index['dims'] must be a positive integer with 'embed', got {dims!r}.", option="index"
            )
        embeddings = ensure_embeddings(embed)
        return _Index(dims, fields, embeddings.aembed_documents, embeddings.aembed_query)

    # -- the contract: batch and abatch -----------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ops in one batch (sync form of `abatch`; works inside a running event loop too)."""
        return run_sync(self.abatch(list(ops)))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ops in one batch: results in op order; reads see the state from before the batch's puts.

        Puts to one key keep the last one; a put of ``None`` deletes.
        """
        ops = list(ops)  # an iterable may be a generator: read it once
        for op in ops:
            self._check(op)
        results: list[Result] = [None] * len(ops)
        if not ops:
            return results
        await self._open()
        due: dict[str, dict[str, float]] = defaultdict(dict)  # tenant -> {head id: ttl minutes} to refresh
        gets: dict[str, list[tuple[int, GetOp]]] = defaultdict(list)
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for i, op in enumerate(ops):
            if isinstance(op, GetOp):
                gets[self._tenant(op.namespace)].append((i, op))
            elif isinstance(op, SearchOp):
                results[i] = await self._search(op, due)
            elif isinstance(op, ListNamespacesOp):
                results[i] = await self._list(op)
            elif isinstance(op, PutOp):
                puts[(tuple(op.namespace), op.key)] = op
        for tenant, group in gets.items():
            heads = await self._heads(tenant, [item_id(op.namespace, op.key) for _, op in group])
            now = _now()
            for i, op in group:
                head = heads.get(item_id(op.namespace, op.key))
                if head is not None and _live(head, now):
                    results[i] = _item(head, Item)
                    if op.refresh_ttl:
                        _note_refresh(due[tenant], head)
        await self._refresh(due)
        await self._write(list(puts.values()))
        return results

    # -- checks, before anything is read or written ---------------------------------------------------
    def _check(self, op: Any) -> None:
        if not isinstance(op, GetOp | SearchOp | ListNamespacesOp | PutOp):
            raise invalid_query(
                f"Unknown store operation {type(op).__name__}.",
                hint="Pass GetOp, SearchOp, ListNamespacesOp or PutOp from langgraph.store.base.",
            )
        validate_op_namespace(op)  # LangGraph's own label rules (InvalidNamespaceError)
        if isinstance(op, GetOp | PutOp):
            self._tenant(op.namespace)
            if not isinstance(op.key, str):
                raise invalid_query(f"Item keys are strings, got {op.key!r}.", hint="Pass str(key).")
        if isinstance(op, PutOp):
            self._check_put(op)
        elif isinstance(op, SearchOp):
            check_filter(op.filter)
            check_page(op.limit, op.offset, "search")
            self._tenant(op.namespace_prefix)
        elif isinstance(op, ListNamespacesOp):
            check_page(op.limit, op.offset, "list_namespaces")
            for cond in op.match_conditions or ():
                if cond.match_type not in ("prefix", "suffix"):
                    raise invalid_query(
                        f"Unknown namespace match type {cond.match_type!r}.", hint="Use 'prefix' or 'suffix'."
                    )
            if op.max_depth is not None and not is_int(op.max_depth, 0):
                raise invalid_query(f"max_depth must be a non-negative integer, got {op.max_depth!r}.")
            self._list_tenant(op)

    def _check_put(self, op: PutOp) -> None:
        if not op.namespace:
            raise record_error(
                "An item's namespace cannot be empty.",
                hint='Use a tuple of labels, e.g. ("memories", user_id).',
            )
        if op.value is not None:
            value_text(op.value, namespace=tuple(op.namespace), key=op.key)
        if op.index is not None and op.index is not False:
            _paths(op.index, "index")
        if op.ttl is not None and not (is_number(op.ttl, finite=False) and op.ttl > 0):
            raise record_error(
                f"ttl is in minutes and must be a positive number or None, got {op.ttl!r}.", record_id=op.key
            )

    def _tenant(self, namespace: Sequence[str]) -> str:
        """The tenant a namespace (or search prefix) belongs to; refused when it names none."""
        depth = self.tenant_depth
        if len(namespace) < depth:
            raise invalid_query(
                f"Namespace {tuple(namespace)!r} does not name a tenant: with tenant_depth={depth}, "
                f"its first {depth} label(s) are the tenant.",
                hint=f"Start every namespace and search prefix with the tenant's {depth} label(s).",
            )
        return json_text(list(namespace[:depth]))

    def _list_tenant(self, op: ListNamespacesOp) -> str:
        depth = self.tenant_depth
        for cond in op.match_conditions or ():
            path = tuple(cond.path)
            if cond.match_type == "prefix" and len(path) >= depth and "*" not in path[:depth]:
                return json_text(list(path[:depth]))
        if depth == 0:
            return json_text([])
        raise invalid_query(
            f"list_namespaces must name a tenant: with tenant_depth={depth}, pass a prefix whose first "
            f"{depth} label(s) are the tenant (no '*' there).",
            hint="Example: store.list_namespaces(prefix=(user_id,)).",
        )

    def _guard(self, tenant: str) -> FilterNode | None:
        return condition("metadata.lg_tenant", "eq", tenant) if self.tenant_depth else None

    def _scope(self, tenant: str, *nodes: FilterNode) -> FilterNode:
        guard = self._guard(tenant)
        return and_(*nodes, guard) if guard is not None else and_(*nodes)

    # -- the collection ----------------------------------------------------------------------------
    async def _open(self) -> None:
        if self._dimension is not None:
            return
        dimension = self._index.dims if self._index is not None else None
        if dimension is None:
            try:  # no index: keep whatever dimension the collection already has
                dimension = (await self.vs.collection_info(self.collection)).dimension
            except CollectionNotFoundError:
                dimension = 1
        info = await self.vs.create_collection(
            self.collection, dimension=dimension, metric="cosine", exist_ok=True, fields=FIELDS
        )
        if info.metric != "cosine":
            raise config_error(
                f"Collection {self.collection!r} uses metric {info.metric!r}; "
                "a LangGraph store scores by cosine.",
                hint="Use a new collection name (TurnkitStore creates it with metric='cosine').",
                collection=self.collection,
            )
        if info.dimension != dimension:
            raise _dimension_mismatch(
                f"Collection {self.collection!r} holds {info.dimension}-dimensional vectors; "
                f"the index gives {dimension}.",
                hint="Use the embedding the collection was written with, or a new collection.",
                collection=self.collection,
            )
        self._dimension = dimension

    async def _heads(self, tenant: str, ids: Sequence[str]) -> dict[str, VectorMatch]:
        if not ids:
            return {}
        found = await self.vs(self.collection).where(self._scope(tenant, _HEAD)).get(list(ids))
        return {m.id: m for m in found}

    def _prefix(self, prefix: Sequence[str]) -> list[FilterNode]:
        return [condition("metadata.lg_prefixes", "contains", prefix_label(prefix))] if prefix else []

    # -- search --------------------------------------------------------------------------------------
    async def _search(self, op: SearchOp, due: dict[str, dict[str, float]]) -> list[SearchItem]:
        tenant = self._tenant(op.namespace_prefix)
        wanted = check_filter(op.filter)
        if op.limit == 0:
            return []
        if op.query and self._index is not None:
            ranked = await self._ranked(op, tenant, wanted)
        else:
            ranked = await self._scanned(op, tenant, wanted)
        page = ranked[op.offset : op.offset + op.limit]
        if op.refresh_ttl:
            for head, _ in page:
                _note_refresh(due[tenant], head)
        return [_item(head, SearchItem, score) for head, score in page]

    async def _scanned(
        self, op: SearchOp, tenant: str, wanted: dict[str, Any] | None
    ) -> list[tuple[VectorMatch, float | None]]:
        """Without a query: every live item under the prefix that passes, newest update first."""
        where = self._scope(tenant, _HEAD, *self._prefix(op.namespace_prefix))
        now = _now()
        kept = [m for m in await self.vs(self.collection).where(where).get() if _live(m, now)]
        kept = [m for m in kept if matches_filter(read_value(m.metadata["lg_value"]), wanted)]  # type: ignore[index]
        kept.sort(key=_position)
        kept.sort(key=lambda m: m.metadata["lg_updated"], reverse=True)  # type: ignore[index]
        return [(m, None) for m in kept]

    async def _ranked(
        self, op: SearchOp, tenant: str, wanted: dict[str, Any] | None
    ) -> list[tuple[VectorMatch, float | None]]:
        """With a query: items by their best vector's cosine similarity, over-fetching for the filter."""
        assert self._index is not None
        query = _vectors([await self._index.query(str(op.query))], self._index.dims)[0]
        if not np.linalg.norm(query):  # a query with nothing to compare (no words): no ranking
            return await self._scanned(op, tenant, wanted)
        where = self._scope(
            tenant, condition("metadata.lg_vec", "eq", True), *self._prefix(op.namespace_prefix)
        )
        need = op.offset + op.limit
        fetch = min(_MAX_FETCH, max(64, 4 * need))
        while True:
            rows = (
                await self.vs(self.collection)
                .near_vector(query)
                .where(where)
                .select("id", "metadata.lg_item", "metadata.lg_gen")
                .limit(fetch)
            )
            ranked = await self._pool(
                tenant, [(r.metadata or {}, 1.0 - float(r.distance or 0.0)) for r in rows], wanted
            )
            if len(ranked) >= need or len(rows) < fetch:
                return ranked
            if fetch == _MAX_FETCH:  # the filter passes few of the nearest rows: score every row exactly
                return await self._pool(tenant, await self._all_scores(where, query), wanted)
            fetch = min(_MAX_FETCH, fetch * 4)

    async def _all_scores(
        self, where: FilterNode, query: np.ndarray[Any, Any]
    ) -> list[tuple[dict[str, Any], float]]:
        q = query / np.linalg.norm(query)
        out = []
        builder = (
            self.vs(self.collection)
            .where(where)
            .select("id", "vector", "metadata.lg_item", "metadata.lg_gen")
        )
        async for row in builder.iter_rows():
            v = np.asarray(row.vector, dtype=np.float64)
            out.append((row.metadata or {}, float(v @ q / np.linalg.norm(v))))
        out.sort(key=lambda pair: -pair[1])
        return out

    async def _pool(
        self, tenant: str, rows: list[tuple[dict[str, Any], float]], wanted: dict[str, Any] | None
    ) -> list[tuple[VectorMatch, float | None]]:
        """Max-pool rows (best first) into their items, keeping rows of each head's current generation."""
        order = list(dict.fromkeys(str(meta.get("lg_item")) for meta, _ in rows))
        heads = await self._heads(tenant, order)
        best: dict[str, float] = {}
        for meta, score in rows:
            head = heads.get(str(meta.get("lg_item")))
            if head is not None and head.metadata and head.metadata.get("lg_gen") == meta.get("lg_gen"):
                best[head.id] = max(best.get(head.id, -2.0), score)
        now = _now()
        kept: list[tuple[VectorMatch, float | None]] = [
            (heads[i], best[i])
            for i in order
            if i in best
            and _live(heads[i], now)
            and matches_filter(read_value(heads[i].metadata["lg_value"]), wanted)  # type: ignore[index]
        ]
        kept.sort(key=lambda pair: -best[pair[0].id])
        return kept

    # -- list_namespaces ---------------------------------------------------------------------------------
    async def _list(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        tenant = self._list_tenant(op)
        conditions = list(op.match_conditions or ())
        pushed: list[FilterNode] = []
        for cond in conditions:
            if cond.match_type == "prefix":  # the labels before a '*' are a literal prefix
                pushed += self._prefix(list(takewhile(lambda label: label != "*", cond.path)))
        where = self._scope(tenant, _HEAD, *pushed)
        builder = self.vs(self.collection).where(where).select("id", "metadata.lg_ns", "metadata.lg_expires")
        now = _now()
        found = {tuple(json.loads(m.metadata["lg_ns"])) for m in await builder.get() if _live(m, now)}  # type: ignore[index]
        names = [ns for ns in found if all(namespace_matches(c, ns) for c in conditions)]
        if op.max_depth is not None:
            names = list({ns[: op.max_depth] for ns in names})
        return sorted(names)[op.offset : op.offset + op.limit]

    # -- writes ------------------------------------------------------------------------------------------
    async def _write(self, puts: list[PutOp]) -> None:
        by_tenant: dict[str, list[PutOp]] = defaultdict(list)
        for op in puts:
            by_tenant[self._tenant(op.namespace)].append(op)
        for tenant, group in by_tenant.items():
            for chunk in batches(group, _CHUNK):
                await self._write_chunk(tenant, chunk)

    async def _write_chunk(self, tenant: str, group: list[PutOp]) -> None:
        ids = [item_id(op.namespace, op.key) for op in group]
        before = await self._heads(tenant, ids)
        gen, now = uuid.uuid4().hex, datetime.fromtimestamp(_now(), UTC)
        texts = [self._texts(op) for op in group]
        vectors = await self._embed(sorted({t for found in texts for _, t in found}))
        rows: list[dict[str, Any]] = []
        for op, iid, found in zip(group, ids, texts, strict=True):
            if op.value is not None:
                old = before.get(iid)
                created = (old.metadata or {}).get("lg_created") if old is not None else None
                rows += self._rows(
                    op, iid, tenant, gen, now, created, [(p, t, vectors.get(t)) for p, t in found]
                )
        if rows:
            await self.vs(self.collection).upsert(rows, guard=self._guard(tenant))
        # What this put replaced: the old generation's text rows, and every row of a deleted item.
        rewritten = [i for op, i in zip(group, ids, strict=True) if op.value is not None and i in before]
        old_gens = sorted({str((before[i].metadata or {}).get("lg_gen")) for i in rewritten})
        deleted = [i for op, i in zip(group, ids, strict=True) if op.value is None and i in before]
        stale: list[FilterNode] = []
        if rewritten:
            stale.append(
                and_(
                    condition("metadata.lg_kind", "eq", "text"),
                    condition("metadata.lg_item", "in", rewritten),
                    condition("metadata.lg_gen", "in", old_gens),
                )
            )
        if deleted:
            stale.append(condition("metadata.lg_item", "in", deleted))
        if stale:
            await self.vs(self.collection).where(self._scope(tenant, or_(*stale))).delete()

    def _texts(self, op: PutOp) -> list[tuple[str, str]]:
        """(path, text) for each text the item's index paths yield, named as LangGraph names them."""
        if op.value is None or op.index is False or self._index is None:
            return []
        fields = self._index.fields if op.index is None else _paths(op.index, "index")
        out: list[tuple[str, str]] = []
        for path, tokens in fields:
            found = get_text_at_path(op.value, tokens)
            if len(found) == 1:
                out.append((path, found[0]))
            else:
                out += [(f"{path}.{n}", text) for n, text in enumerate(found)]
        return out

    async def _embed(self, texts: list[str]) -> dict[str, np.ndarray[Any, Any] | None]:
        """Each distinct text's vector, embedded in one call; ``None`` for a zero vector (nothing to rank)."""
        if not texts or self._index is None:
            return {}
        vectors = _vectors(await self._index.documents(texts), self._index.dims, expected=len(texts))
        norms = np.linalg.norm(vectors, axis=1)
        return {t: (v if n > 0 else None) for t, v, n in zip(texts, vectors, norms, strict=True)}

    def _rows(
        self,
        op: PutOp,
        iid: str,
        tenant: str,
        gen: str,
        now: datetime,
        created: str | None,
        texts: list[tuple[str, str, np.ndarray[Any, Any] | None]],
    ) -> list[dict[str, Any]]:
        namespace = tuple(op.namespace)
        dimension = self._dimension or 1
        indexed = [(path, text, v) for path, text, v in texts if v is not None]
        shared = {
            "trust_tier": self.trust_tier,
            "lg_item": iid,
            "lg_gen": gen,
            "lg_tenant": tenant,
            "lg_vec": True,
            "lg_prefixes": [prefix_label(namespace[: n + 1]) for n in range(len(namespace))],
        }
        stamp = now.isoformat()
        ttl = float(op.ttl) if op.ttl is not None else None
        placeholder = np.eye(1, dimension, dtype=np.float32)[0]  # a unit vector: rows with no text to embed
        first = indexed[0] if indexed else None
        head = {
            "id": iid,
            "vector": first[2] if first else placeholder,
            "document": self._document(first[1] if first else None, op.value),
            "metadata": shared
            | {
                "lg_kind": "item",
                "lg_vec": first is not None,
                "lg_path": json_text(first[0]) if first else None,
                "lg_ns": json_text(list(namespace)),
                "lg_key": json_text(op.key),  # ASCII JSON, as every stored label: any str survives
                "lg_value": value_text(op.value, namespace=namespace, key=op.key),
                "lg_created": created or stamp,
                "lg_updated": stamp,
                "lg_ttl": ttl,
                "lg_expires": now.timestamp() + ttl * 60 if ttl is not None else None,
            },
        }
        more = [
            {
                "id": f"{iid}.{gen}.{n}",
                "vector": v,
                "document": self._document(text, None),
                "metadata": shared | {"lg_kind": "text", "lg_path": json_text(path)},
            }
            for n, (path, text, v) in enumerate(indexed[1:], 1)
        ]
        return [head, *more]

    def _document(self, text: str | None, value: Any) -> str:
        """The row's text for turnkit's own retrieval (the value is kept exactly in metadata)."""
        if text is None:
            text = json.dumps(value, sort_keys=True, ensure_ascii=False)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: not storable as text
            text = json.dumps(text, ensure_ascii=True)[1:-1]
        limit = self.vs.max_document_chars
        return text[:limit] if limit is not None else text

    # -- TTL ---------------------------------------------------------------------------------------------
    async def _refresh(self, due: Mapping[str, Mapping[str, float]]) -> None:
        now = _now()
        for tenant, items in due.items():
            updates = {iid: {"lg_expires": now + ttl * 60} for iid, ttl in items.items()}
            await self.vs(self.collection).update_metadata(updates, guard=self._guard(tenant))

    async def asweep_ttl(self) -> int:
        """Delete every expired item (its rows, every tenant's); returns how many items were deleted.

        Reads never return an expired item, so this only reclaims space: call it
        from a scheduled job, as LangGraph's ``PostgresStore.sweep_ttl`` is.
        """
        await self._open()
        expired = condition("metadata.lg_expires", "<=", _now())
        builder = self.vs(self.collection).where(and_(_HEAD, expired)).select("id", "metadata.lg_tenant")
        by_tenant: dict[str, list[str]] = defaultdict(list)
        for head in await builder.get():
            by_tenant[str((head.metadata or {}).get("lg_tenant"))].append(head.id)
        for tenant, ids in by_tenant.items():
            for chunk in batches(ids, _CHUNK):
                where = and_(
                    condition("metadata.lg_tenant", "eq", tenant), condition("metadata.lg_item", "in", chunk)
                )
                await self.vs(self.collection).where(where).delete()
        return sum(len(ids) for ids in by_tenant.values())

    def sweep_ttl(self) -> int:
        """Sync form of `asweep_ttl`."""
        return run_sync(self.asweep_ttl())


def _encoder_index(encoder: Encoder, fields: tuple[tuple[str, str | list[str]], ...]) -> _Index:
    async def documents(texts: list[str]) -> Any:
        return await encode_texts(encoder, texts, "document")

    async def query(text: str) -> Any:
        return (await encode_texts(encoder, [text], "query"))[0]

    return _Index(encoder.dimension, fields, documents, query)


def _vectors(raw: Any, dims: int, *, expected: int | None = None) -> np.ndarray[Any, Any]:
    """The embedding function's output as float32 rows, checked (size, dimension, finite)."""
    try:
        vectors = np.asarray(raw, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise _encoder_failed(
            f"The embedding function returned something that is not vectors: {exc}."
        ) from None
    if vectors.ndim != 2 or (expected is not None and vectors.shape[0] != expected):
        raise _encoder_failed(
            f"The embedding function returned shape {vectors.shape} for {expected} texts.",
            hint="It must return one vector per text.",
        )
    if vectors.shape[1] != dims:
        raise _dimension_mismatch(
            f"The embedding function returned {vectors.shape[1]}-dimensional vectors; "
            f"index['dims'] is {dims}.",
        )
    if not np.isfinite(vectors).all():
        raise _encoder_failed("The embedding function returned NaN or infinity.")
    return vectors


def _live(head: VectorMatch, now: float) -> bool:
    expires = (head.metadata or {}).get("lg_expires")
    return expires is None or float(expires) > now


def _note_refresh(due: dict[str, float], head: VectorMatch) -> None:
    ttl = (head.metadata or {}).get("lg_ttl")
    if ttl is not None:
        due[head.id] = float(ttl)


def _position(head: VectorMatch) -> tuple[str, str]:
    meta = head.metadata or {}
    return (str(meta.get("lg_ns")), str(meta.get("lg_key")))


def _item(head: VectorMatch, kind: type[Any], score: float | None = None) -> Any:
    meta = head.metadata or {}
    fields = {
        "namespace": tuple(json.loads(meta["lg_ns"])),
        "key": json.loads(meta["lg_key"]),
        "value": read_value(meta["lg_value"]),
        "created_at": datetime.fromisoformat(meta["lg_created"]),
        "updated_at": datetime.fromisoformat(meta["lg_updated"]),
    }
    return SearchItem(**fields, score=score) if kind is SearchItem else Item(**fields)
