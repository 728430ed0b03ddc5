"""Google ADK adapter: a turnkit collection as an ADK ``BaseMemoryService``.

Needs ``turnkit[adk]`` (``google-adk``). See docs/integrations/google-adk.md.

`TurnkitMemoryService` stores the text of a session's events as records of
one collection, scoped by ``(app_name, user_id)`` with a write guard, and
answers ``search_memory`` with turnkit's retrieval (`RetrievalSettings`) as
ADK ``MemoryEntry`` objects, best first. The records live wherever the store
does (a local directory, object storage, LanceDB Cloud), so memory outlives
the process and several processes share it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from google.adk.memory import BaseMemoryService
from google.adk.memory.base_memory_service import SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types

from .. import Retrievable, TrustTier, render_prompt, validate_trust_tier
from ..batteries.vector import (
    CollectionNotFoundError,
    FilterKeyNotFoundError,
    FilterNode,
    QueryBuilder,
    RetrievalSettings,
    SettingsInput,
    VectorMatch,
    VectorStore,
    and_,
    condition,
    retrieve,
)
from ._common import batches, config_error, expect_store, invalid_query, record_error

if TYPE_CHECKING:
    from google.adk.events import Event
    from google.adk.sessions import Session

__all__ = ["TurnkitMemoryService"]

EVENT_KIND = "adk_event"
"""``metadata.kind`` of a stored event."""
DELETED_KIND = "adk_deleted"
"""``metadata.kind`` of a deleted memory's marker, which keeps a later re-add from restoring it."""
UNKNOWN_SESSION_ID = "__unknown_session_id__"
"""The session of events added without one (ADK's own services use the same bucket)."""

_CHUNK = 1000  # ids per `where_in` (well under the filter's limit)


class TurnkitMemoryService(BaseMemoryService):
    """An ADK memory service over a turnkit vector store collection (see docs/integrations/google-adk.md).

    Each event with text becomes one record: its text parts (not ``thought`` parts) are the
    document; the metadata holds ``app_name``, ``user_id``, ``session_id``, ``author``,
    ``timestamp``, the event's ``content`` as JSON and ``trust_tier``. Every write and read goes
    through a guard on ``app_name`` and ``user_id``, so no user reaches another's records.

    Args:
        store: A `VectorStore` with an encoder; for many users, declare the scope keys as fields
            (``fields={"app_name": str, "user_id": str}``).
        collection: The collection the memories live in.
        trust_tier: The tier stored on every record (default ``"third-party"``: what a user or a
            model said is not the operator's vetted data).
        settings: The retrieval: `RetrievalSettings` or a dict of its fields; its ``filter`` is
            ANDed with the user's scope.
        fence: Return entries not ``first-party`` inside a nonce fence, as `turnkit.render_prompt`
            fences untrusted records; ``False`` returns each event's content as stored.

    Raises:
        VectorStoreUsageError: ``E_INVALID_VECTOR_STORE_CONFIG``: ``store`` is not a `VectorStore`, or has no
            encoder.
        VectorStoreUsageError: ``E_VECTOR_STORE_INVALID_COLLECTION_NAME``: ``collection`` is not a valid name.
        UnknownTrustTierError: ``trust_tier`` is not a known tier.
        InvalidRankingConfigError: ``settings`` is not usable.
    """

    def __init__(
        self,
        store: VectorStore,
        *,
        collection: str = "adk_memory",
        trust_tier: TrustTier = "third-party",
        settings: SettingsInput = None,
        fence: bool = True,
    ) -> None:
        expect_store(store)
        if store.encoder is None:
            raise config_error(
                "TurnkitMemoryService needs a store with an encoder: it encodes each event's text.",
                hint="create_vector_store(uri, encoder=...), e.g. MiniLMEncoder() or HashEncoder() in tests.",
            )
        store(collection)  # checks the name now, not at the first write
        self.store = store
        self.collection = collection
        self.trust_tier: TrustTier = validate_trust_tier(trust_tier)
        self.settings = RetrievalSettings.of(settings)
        self.fence = bool(fence)

    def __repr__(self) -> str:
        return f"<TurnkitMemoryService collection={self.collection!r} trust_tier={self.trust_tier!r}>"

    # -- scope --------------------------------------------------------------------------------
    @staticmethod
    def scope(app_name: str, user_id: str) -> FilterNode:
        """The guard of one user's memories: ``metadata.app_name`` and ``metadata.user_id`` equal.

        Built the same way in every process, so it names the same scope everywhere.
        """
        for name, value in (("app_name", app_name), ("user_id", user_id)):
            if not isinstance(value, str):
                raise invalid_query(f"{name} must be a string, not {type(value).__name__}.")
        return and_(
            condition("metadata.app_name", "eq", app_name),
            condition("metadata.user_id", "eq", user_id),
        )

    # -- writes -------------------------------------------------------------------------------
    async def add_session_to_memory(self, session: Session) -> None:
        """Store the session's events; the session's earlier records are replaced.

        Called again with the grown session, it encodes only events that are
        new or changed, and removes the records of events the session no
        longer holds (as ADK's ``InMemoryMemoryService`` replaces the
        session's list). A deleted memory is never stored again.
        """
        await self._write(session.app_name, session.user_id, session.id, session.events, replace=True)

    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Store events as a delta: new ids are added, known ids updated, nothing removed.

        ``custom_metadata`` is not used (ADK leaves its keys to each service).
        """
        del custom_metadata
        await self._write(app_name, user_id, session_id or UNKNOWN_SESSION_ID, events, replace=False)

    async def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[MemoryEntry],
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Store memory entries directly (each entry's ``id``, else a hash of its content, is its key).

        ``custom_metadata`` is not used; each entry's own ``custom_metadata``
        is kept and returned by searches.
        """
        del custom_metadata
        records = [  # every timestamp is checked before anything is written
            self._record(
                app_name,
                user_id,
                m.id,
                m.author or "",
                _parse_time(m.timestamp),
                m.content,
                None,
                m.custom_metadata,
            )
            for m in memories
        ]
        await self._upsert(app_name, user_id, records, None)

    async def delete_memory(self, *, app_name: str, user_id: str, memory_id: str | None = None) -> None:
        """Delete one memory by its ``MemoryEntry.id``; re-adding its session does not bring it back.

        The record is replaced by a marker without text, inside the same
        scope; an id the user does not hold is ignored.
        """
        if not memory_id:
            return
        guard = self.scope(app_name, user_id)
        stored = await self._stored(guard, [memory_id])
        if memory_id not in stored or stored[memory_id].get("kind") == DELETED_KIND:
            return
        encoder = self.store.encoder
        assert encoder is not None  # checked in __init__
        # The marker keeps no text: a unit vector stands in, and searches skip the kind.
        vector = [1.0] + [0.0] * (encoder.dimension - 1)
        metadata = {"app_name": app_name, "user_id": user_id, "kind": DELETED_KIND}
        await self._vs.upsert([{"id": memory_id, "vector": vector, "metadata": metadata}], guard=guard)

    # -- reads --------------------------------------------------------------------------------
    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        """The user's memories closest to ``query``, best first, at most the settings' ``top_k``.

        A blank query finds nothing. Each entry's ``custom_metadata`` holds
        ``session_id``, ``trust_tier`` and ``score`` (higher is closer), and
        any ``custom_metadata`` it was added with.
        """
        if not isinstance(query, str) or not query.strip():
            return SearchMemoryResponse()
        guard = self.scope(app_name, user_id)
        builder = self._vs.near_text(query).where(guard).where("metadata.kind", EVENT_KIND)
        try:
            found = await retrieve(builder, self.settings, missing_ok=True)
        except FilterKeyNotFoundError:  # a collection no memory was written to yet
            return SearchMemoryResponse()
        return SearchMemoryResponse(memories=[self._entry(m) for m in found.matches])

    # -- internals ----------------------------------------------------------------------------
    @property
    def _vs(self) -> QueryBuilder:
        return self.store(self.collection)

    async def _write(
        self, app_name: str, user_id: str, session_id: str, events: Iterable[Event], *, replace: bool
    ) -> None:
        records = [
            self._record(app_name, user_id, e.id, e.author or "", float(e.timestamp), e.content, session_id)
            for e in events
            if e.content is not None and e.content.parts
        ]
        await self._upsert(app_name, user_id, records, session_id if replace else None)

    async def _upsert(
        self, app_name: str, user_id: str, made: list[dict[str, Any] | None], replace_session: str | None
    ) -> None:
        records = [r for r in made if r is not None]  # None: no text, nothing to search for
        guard = self.scope(app_name, user_id)
        stored = await self._stored(guard, [r["id"] for r in records])
        stale: list[str] = []
        if replace_session is not None:
            session_rows = await self._stored(guard, None, session_id=replace_session)
            stored.update(session_rows)
            ids = {r["id"] for r in records}
            stale = [i for i, meta in session_rows.items() if i not in ids and meta.get("kind") == EVENT_KIND]
        fresh = {}
        for record in records:  # the last copy of an id wins, as a later event would
            meta = stored.get(record["id"])
            if meta is not None and (
                meta.get("kind") == DELETED_KIND or meta.get("digest") == record["metadata"]["digest"]
            ):
                continue  # deleted, or already stored as it is: nothing to encode
            fresh[record["id"]] = record
        if fresh:
            await self._vs.upsert(list(fresh.values()), guard=guard)
        for chunk in batches(stale, _CHUNK):
            await (
                self._vs.where(guard)
                .where("metadata.session_id", replace_session)
                .where_in("id", chunk)
                .delete()
            )

    async def _stored(
        self, guard: FilterNode, ids: list[str] | None, *, session_id: str | None = None
    ) -> dict[str, dict[str, Any]]:
        """The metadata of the rows with these ids (``None``: of the session's rows), by id."""
        builder = self._vs.where(guard).select("id", "metadata")
        if session_id is not None:
            builder = builder.where("metadata.session_id", session_id)
        found: dict[str, dict[str, Any]] = {}
        try:
            for chunk in [None] if ids is None else batches(dict.fromkeys(ids), _CHUNK):
                found.update((row.id, row.metadata or {}) for row in await builder.get(chunk))
        except CollectionNotFoundError:
            return {}
        return found

    def _record(
        self,
        app_name: str,
        user_id: str,
        memory_id: str | None,
        author: str,
        timestamp: float,
        content: types.Content,
        session_id: str | None,
        extra: Mapping[str, Any] | None = None,
    ) -> dict[str, Any] | None:
        text = _text_of(content)
        if not text.strip():
            return None  # function calls and responses only
        content_json = content.model_dump_json(exclude_none=True)
        if not memory_id:
            # ADK's SQLite service keys id-less events the same way, so re-adding them is idempotent.
            memory_id = hashlib.sha256(f"{author}:{timestamp}:{content_json}".encode()).hexdigest()[:32]
        metadata: dict[str, Any] = {
            "app_name": app_name,
            "user_id": user_id,
            "session_id": session_id,
            "author": author,
            "timestamp": timestamp,
            "content": content_json,
            "trust_tier": self.trust_tier,
            "kind": EVENT_KIND,
        }
        if extra:
            metadata["custom_metadata"] = dict(extra)
        digest_source = repr(sorted((k, repr(v)) for k, v in metadata.items())) + text
        metadata["digest"] = hashlib.sha256(digest_source.encode()).hexdigest()[:32]
        return {"id": memory_id, "document": text, "metadata": metadata}

    def _entry(self, match: VectorMatch) -> MemoryEntry:
        meta = dict(match.metadata or {})
        content = types.Content.model_validate_json(meta["content"])
        tier = str(meta.get("trust_tier") or self.trust_tier)
        stamp = meta.get("timestamp")
        when = datetime.fromtimestamp(float(stamp), UTC) if isinstance(stamp, int | float) else None
        author = meta.get("author")
        custom: dict[str, Any] = dict(meta.get("custom_metadata") or {})
        custom.update(session_id=meta.get("session_id"), trust_tier=tier, score=match.score)
        if self.fence and tier != "first-party":
            content = _fenced(match, content, tier, author, when)
        return MemoryEntry(
            id=match.id,
            content=content,
            author=author,
            timestamp=when.isoformat() if when is not None else None,
            custom_metadata=custom,
        )


def _text_of(content: types.Content) -> str:
    return " ".join(p.text for p in content.parts or () if p.text and not p.thought)


def _parse_time(value: str | None) -> float:
    if not value:
        return datetime.now(UTC).timestamp()
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise record_error(
            f"MemoryEntry.timestamp {value!r} is not an ISO 8601 time; nothing was written.",
            hint="Use datetime.isoformat(), e.g. '2026-01-31T12:00:00+00:00'.",
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def _fenced(
    match: VectorMatch, content: types.Content, tier: str, author: str | None, when: datetime | None
) -> types.Content:
    record = Retrievable(
        id=match.id,
        content=_text_of(content),
        trust_tier=validate_trust_tier(tier),
        source=author,
        created_at=when or datetime.now(UTC),
    )
    # Only the fence: the directive belongs in the agent's instruction, once.
    fence = render_prompt(retrievables=[record], safety_directive="", untrusted_placement="system").context
    return types.Content(role=content.role, parts=[types.Part(text=fence)])
