"""Conversation history in a collection: a `TurnRunner`'s message callbacks that outlive the process.

`create_vector_message_store` keeps one ordered history per conversation in a
collection of a `VectorStore`. Order is a per-conversation sequence number
taken under a lock that spans processes where the storage has one (a local
disk), never a timestamp, so replicas writing one conversation agree on one
order. Every message is also encoded, so past turns can be *recalled* by
meaning (the ``recall`` option), not only read back as the last N.

A recalled turn is text a user or a model wrote, not something the deployer
vetted: it comes back as a `Retrievable` with the tier the deployer declared
for conversation memory (``trust_tier``, third-party by default) and is fenced
as such in the prompt.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import os
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any, ClassVar, Literal, NotRequired, TypeAlias, TypedDict, Unpack

from turnkit._aio import on_loop, sync_form
from turnkit._checks import STORE_HINT, expect, expect_text, is_int
from turnkit._context import TurnContext
from turnkit._errors import TurnkitError, UsageError
from turnkit._messages import Message
from turnkit._pipeline import Next
from turnkit._retrievable import Retrievable, TrustTier, trust_rank, validate_trust_tier
from turnkit.batteries.vector._errors import (
    CollectionNotFoundError,
    FilterKeyNotFoundError,
    VectorStoreUsageError,
)
from turnkit.batteries.vector._glue_parts import CallbackMapping
from turnkit.batteries.vector._matches import VectorMatch
from turnkit.batteries.vector._retrieve import retrieve
from turnkit.batteries.vector._settings import RetrievalSettings, SettingsInput
from turnkit.batteries.vector.filters._ast import FilterNode
from turnkit.batteries.vector.filters._build import and_, condition, not_
from turnkit.batteries.vector.query._builder import QueryBuilder
from turnkit.batteries.vector.store._catalog import create
from turnkit.batteries.vector.store._fields import normalize_fields
from turnkit.batteries.vector.store._locks import collection_lock
from turnkit.batteries.vector.store._store import VectorStore

__all__ = ["RecallScope", "TenantRule", "VectorMessageStore", "create_vector_message_store"]

_context_error = partial(UsageError, code="E_INVALID_TURN_CONTEXT")
_config_error = partial(VectorStoreUsageError, code="E_INVALID_RETRIEVABLE_GLUE_CONFIG")

log = logging.getLogger("turnkit.vector.history")

RecallScope: TypeAlias = Literal["conversation", "all"]
"""What recall searches: this conversation, or every conversation the store may read (the tenant's)."""
TenantRule: TypeAlias = "str | Callable[[TurnContext], str]"
"""A tenant for every turn, or a function of the turn's context returning one."""

HISTORY_FIELDS: dict[str, type] = {"conversation_id": str, "seq": int, "tenant": str}
"""Metadata keys a history collection declares as typed, indexed columns (its filters read them)."""

_HINT = "See docs/message-store.md for the options of create_vector_message_store()."
_option_error = partial(_config_error, hint=_HINT)
_SELECT = ("id", "document", "metadata")
# Seq values are declared int64 columns; JSON keeps integers exact to 2**53.
_MAX_SEQ = 2**53
# One writer per collection per process: the asyncio locks live on turnkit's loop, keyed by process.
_LOCKS: dict[tuple[int, str, str], asyncio.Lock] = {}


@dataclass(frozen=True, slots=True)
class _Row:
    """One stored message with its place in the conversation."""

    record_id: str
    conversation_id: str
    seq: int
    tier: str | None
    message: Message


def record_id(conversation_id: str, message_id: str) -> str:
    """The record id of a message: unambiguous whatever characters either id holds."""
    return f"{len(conversation_id)}:{conversation_id}:{message_id}"


class VectorMessageStore(CallbackMapping):
    """One collection of a `VectorStore` as a `TurnRunner`'s conversation history.

    It is a read-only mapping of ``fetch_messages`` and ``store_message``, so
    ``TurnRunnerConfig(model=..., **history)`` wires both. Build it with
    `create_vector_message_store`.

    Attributes:
        store: The `VectorStore`.
        collection: The collection holding the messages.
        window: ``fetch_messages`` returns at most this many latest messages (``None``: all).
        recall: The `RetrievalSettings` of recall, or ``None`` when recall is off.
        recall_scope: ``"conversation"`` or ``"all"`` (every conversation in the tenant).
        trust_tier: The tier recalled messages carry (written with each message too).
    """

    NAMES: ClassVar[tuple[str, ...]] = ("fetch_messages", "store_message")

    def __init__(
        self,
        *,
        store: VectorStore,
        collection: str,
        tenant: TenantRule | None = None,
        window: int | None = None,
        recall: bool | SettingsInput = False,
        recall_scope: RecallScope = "conversation",
        trust_tier: TrustTier = "third-party",
    ) -> None:
        expect(store, VectorStore, "store", _config_error, STORE_HINT, field="store")
        store(collection)  # a bad collection name fails now, not at the first turn
        if tenant is not None and not callable(tenant) and not _is_name(tenant):
            raise _option_error(
                "tenant must be a non-empty string, a function of the turn's context, or None; "
                f"got {tenant!r}.",
                field="tenant",
            )
        if window is not None and not is_int(window, 1):
            raise _option_error(f"window must be a positive int or None, got {window!r}.", field="window")
        if recall_scope not in ("conversation", "all"):
            raise _option_error(
                f"recall_scope must be 'conversation' or 'all', got {recall_scope!r}.", field="recall_scope"
            )
        try:
            self.trust_tier: TrustTier = validate_trust_tier(trust_tier)
        except TurnkitError as exc:
            raise _config_error(exc.message, hint=exc.hint, field="trust_tier") from None
        self.recall: RetrievalSettings | None = None
        if recall is not False and recall is not None:
            try:
                self.recall = RetrievalSettings.of(None if recall is True else recall)
            except TurnkitError as exc:
                raise _config_error(
                    exc.message, hint=exc.hint, field=f"recall.{exc.context.get('field', '')}".rstrip(".")
                ) from None
        self.store = store
        self.collection = collection
        self.window = window
        self.recall_scope: RecallScope = recall_scope
        self._tenant = tenant
        self._prepared = False
        self._tails: dict[tuple[str | None, str], int] = {}  # the highest seq seen per conversation

    def __repr__(self) -> str:
        tenant = "<function>" if callable(self._tenant) else self._tenant
        return (
            f"<VectorMessageStore collection={self.collection!r} tenant={tenant!r} "
            f"window={self.window} recall={'on' if self.recall else 'off'}>"
        )

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)

    def for_tenant(self, tenant: str) -> VectorMessageStore:
        """The same history, scoped to one tenant (for `messages`, `append`… and the Agents SDK session).

        Raises:
            VectorStoreUsageError: ``E_INVALID_RETRIEVABLE_GLUE_CONFIG``: ``tenant`` is not a non-empty
                string.
        """
        if not _is_name(tenant):
            raise _option_error(f"for_tenant() takes a non-empty string, got {tenant!r}.", field="tenant")
        scoped = copy.copy(self)
        scoped._tenant = tenant
        scoped._tails = {}
        return scoped

    # -- TurnRunner callbacks -----------------------------------------------------------------
    async def fetch_messages(self, ctx: TurnContext) -> list[Message]:
        """The conversation's latest ``window`` messages (all without one), oldest first.

        Reads the collection's latest version first, so a message another
        process or replica stored before this call is there.
        """
        rows = await self._rows(self._tenant_of(ctx), ctx.conversation_id, keep=self.window)
        return [row.message for row in rows]

    async def store_message(self, ctx: TurnContext, message: Message) -> None:
        """Append ``message`` to ``ctx.conversation_id``; a message id already there is replaced in place."""
        await self._append(self._tenant_of(ctx), ctx.conversation_id, [message])

    # -- recall --------------------------------------------------------------------------------
    async def recall_turns(self, ctx: TurnContext) -> list[Retrievable]:
        """Past messages relevant to this turn's user message, as records of the memory tier.

        Searches with `recall`'s settings (turnkit's one retrieval pipeline)
        near the turn's user message, in this conversation (or every
        conversation of the tenant with ``recall_scope="all"``), leaving out
        the messages the window already shows and this turn's own.

        Raises:
            VectorStoreUsageError: ``E_INVALID_RETRIEVABLE_GLUE_CONFIG``: recall is off.
        """
        if self.recall is None:
            raise _config_error(
                "This message store was created without recall.",
                hint="Pass recall=True (or a dict of RetrievalSettings fields) "
                "to create_vector_message_store().",
                field="recall",
            )
        question = ctx.user_message or await ctx.last_user_message()
        if question is None or not question.content.strip():
            return []
        tenant = self._tenant_of(ctx)
        await self._prepare()
        shown = await self._rows(tenant, ctx.conversation_id, keep=self.window)
        here = condition("metadata.conversation_id", "eq", ctx.conversation_id)
        # The window starts at its oldest message; everything from there on is already in the prompt.
        start = min((row.seq for row in shown), default=None)
        parts: list[FilterNode] = []
        if self.recall_scope == "conversation":
            parts.append(here)
            if start is not None:
                parts.append(condition("metadata.seq", "lt", start))
        elif start is not None:
            parts.append(not_(and_(here, condition("metadata.seq", "gte", start))))
        turn_ids = [record_id(ctx.conversation_id, m.id) for m in ctx.turn_messages]
        if turn_ids:
            parts.append(condition("id", "nin", turn_ids))
        query = self._scoped(tenant).near_text(question.content)
        if parts:
            query = query.where(and_(*parts))
        try:
            found = await retrieve(query, self.recall, missing_ok=True)
        except FilterKeyNotFoundError:
            return []
        return [r for m in found.matches if (r := self._recalled(m)) is not None]

    async def recall_stage(self, ctx: TurnContext, next_: Next) -> None:
        """Input middleware: add `recall_turns` to the turn, then continue.

        Put it in ``TurnRunnerConfig(input_pipeline=[history.recall_stage,
        fetch_retrievables_stage])``.
        """
        ctx.turn_retrievables.extend(await self.recall_turns(ctx))
        await next_()

    # -- direct use ----------------------------------------------------------------------------
    async def messages(self, conversation_id: str, *, limit: int | None = None) -> list[Message]:
        """A conversation's messages, oldest first: the latest ``limit`` of them (``None``: all).

        Raises:
            UsageError: ``E_INVALID_TURN_CONTEXT``: ``conversation_id`` is empty, or ``limit`` is negative.
        """
        if limit is not None and not is_int(limit, 0):
            raise _context_error(f"limit must be an int >= 0 or None, got {limit!r}.", field="limit")
        rows = await self._rows(self._fixed_tenant(), _checked_id(conversation_id), keep=limit)
        return [row.message for row in rows]

    async def append(self, conversation_id: str, messages: Sequence[Message]) -> None:
        """Append ``messages`` to a conversation, in order, in one commit.

        A message whose id the conversation holds already is replaced in place.
        """
        await self._append(self._fixed_tenant(), _checked_id(conversation_id), list(messages))

    async def pop(self, conversation_id: str) -> Message | None:
        """Remove and return the conversation's latest message (``None`` when it is empty)."""
        conversation_id = _checked_id(conversation_id)
        return await on_loop(self._pop_locked(self._fixed_tenant(), conversation_id))

    async def clear(self, conversation_id: str) -> int:
        """Delete every message of a conversation; returns how many were removed."""
        conversation_id = _checked_id(conversation_id)
        return await on_loop(self._clear_locked(self._fixed_tenant(), conversation_id))

    messages_sync = sync_form(messages)
    append_sync = sync_form(append)
    pop_sync = sync_form(pop)
    clear_sync = sync_form(clear)

    # -- internals -----------------------------------------------------------------------------
    def _tenant_of(self, ctx: TurnContext) -> str | None:
        rule = self._tenant
        if rule is None or isinstance(rule, str):
            return rule
        value = rule(ctx)
        if not _is_name(value):
            raise _context_error(
                f"The tenant function returned {value!r} for conversation {ctx.conversation_id!r}; "
                "it must return a non-empty string.",
                hint="Return the tenant of the request (its id), never None.",
                field="tenant",
            )
        return value

    def _fixed_tenant(self) -> str | None:
        if callable(self._tenant):
            raise _config_error(
                "This message store takes its tenant from each turn's context; outside a turn it has none.",
                hint="Call history.for_tenant('...') and use the scoped store.",
                field="tenant",
            )
        return self._tenant

    def _guard(self, tenant: str | None) -> FilterNode | None:
        return None if tenant is None else condition("metadata.tenant", "eq", tenant)

    def _scoped(self, tenant: str | None) -> QueryBuilder:
        query = self.store(self.collection)
        guard = self._guard(tenant)
        return query if guard is None else query.where(guard)

    def _conversation(self, tenant: str | None, conversation_id: str) -> QueryBuilder:
        return self._scoped(tenant).where("metadata.conversation_id", conversation_id).select(*_SELECT)

    async def _prepare(self) -> None:
        # Declared once per store object: the conversation, sequence and tenant filters read columns.
        if self._prepared:
            return
        await on_loop(create(self.store, self.collection, None, None, True, normalize_fields(HISTORY_FIELDS)))
        self._prepared = True

    async def _read(self, query: QueryBuilder) -> list[_Row]:
        try:
            # On turnkit's loop: the page iterator must not outlive a caller's loop (Runner.run_sync's).
            return self._ordered(await on_loop(query.get()))
        except (CollectionNotFoundError, FilterKeyNotFoundError):
            return []

    async def _rows(self, tenant: str | None, conversation_id: str, *, keep: int | None = None) -> list[_Row]:
        await self.store._catch_up(self.collection)
        rows = await self._read(self._conversation(tenant, conversation_id))
        if rows:
            key = (tenant, conversation_id)
            self._tails[key] = max(self._tails.get(key, -1), rows[-1].seq)
        if keep is not None:
            rows = rows[max(0, len(rows) - keep) :] if keep > 0 else []
        return rows

    def _ordered(self, matches: list[VectorMatch]) -> list[_Row]:
        rows = [row for row in map(self._row, matches) if row is not None]
        # Equal seqs happen only where writers take no lock (object storage);
        # the id breaks the tie, the same way in every reader.
        rows.sort(key=lambda row: (row.seq, row.record_id))
        return rows

    def _row(self, match: VectorMatch) -> _Row | None:
        meta = match.metadata or {}
        try:
            role = meta["role"]
            document = match.document or ""
            prefix = f"{role}: "
            if not isinstance(role, str) or not document.startswith(prefix):
                raise ValueError("the document does not start with the role")
            seq = meta["seq"]
            if not is_int(seq):
                raise ValueError("seq is not an integer")
            message = Message(
                role=role,  # type: ignore[arg-type]
                content=document[len(prefix) :],
                id=meta["message_id"],
                created_at=meta["message_created_at"],
                updated_at=meta["message_updated_at"],
                metadata=meta.get("message_metadata") or {},
            )
            tier = meta.get("trust_tier")
            return _Row(
                match.id, str(meta["conversation_id"]), seq, None if tier is None else str(tier), message
            )
        except (KeyError, ValueError, TypeError, UsageError) as exc:  # UsageError: E_INVALID_MESSAGE
            # A row this store did not write (or a damaged one) is skipped, as SQLiteSession skips bad JSON.
            log.warning(
                "collection %r: skipped record %r, not a stored message (%s)", self.collection, match.id, exc
            )
            return None

    def _record(self, tenant: str | None, conversation_id: str, seq: int, message: Message) -> dict[str, Any]:
        assert message.updated_at is not None  # Message defaults it to created_at
        metadata: dict[str, Any] = {
            "conversation_id": conversation_id,
            "seq": seq,
            "role": message.role,
            "message_id": message.id,
            "message_created_at": message.created_at.isoformat(),
            "message_updated_at": message.updated_at.isoformat(),
            "message_metadata": message.metadata,
            "trust_tier": self.trust_tier,
        }
        if tenant is not None:
            metadata["tenant"] = tenant
        # The role leads the document: recall shows who said it, and the text is never empty.
        return {
            "id": record_id(conversation_id, message.id),
            "document": f"{message.role}: {message.content}",
            "metadata": metadata,
        }

    async def _append(self, tenant: str | None, conversation_id: str, messages: list[Message]) -> None:
        for i, message in enumerate(messages):
            if not isinstance(message, Message):
                raise UsageError(
                    f"Message {i} to store is a {type(message).__name__}, not a turnkit Message.",
                    code="E_INVALID_MESSAGE",
                    field="message",
                )
        if not messages:
            return
        await self._prepare()
        await on_loop(self._append_locked(tenant, conversation_id, messages))

    @asynccontextmanager
    async def _writing(self) -> AsyncIterator[None]:
        # Reading the tail and writing after it is one step: one writer per collection in this
        # process, and on a local disk across processes (the lock file is not a collection's).
        key = (os.getpid(), self.store._db_key, self.collection)
        lock = _LOCKS.setdefault(key, asyncio.Lock())
        async with lock, collection_lock(self.store.uri, f"{self.collection}@history"):
            await self.store._catch_up(self.collection)
            yield

    async def _append_locked(self, tenant: str | None, conversation_id: str, messages: list[Message]) -> None:
        async with self._writing():
            ids = [record_id(conversation_id, m.id) for m in messages]
            # A message stored again (a retry) keeps its place; new ones go after the tail.
            existing = {row.record_id: row for row in await self._kept(tenant, conversation_id, ids)}
            seq = await self._tail(tenant, conversation_id)
            records: dict[str, dict[str, Any]] = {}
            for rid, message in zip(ids, messages, strict=True):
                if rid in existing:
                    place = existing[rid].seq
                elif rid in records:
                    place = records[rid]["metadata"]["seq"]
                else:
                    seq += 1
                    place = seq
                records[rid] = self._record(tenant, conversation_id, place, message)
            await self.store(self.collection).upsert(list(records.values()), guard=self._guard(tenant))
            self._tails[(tenant, conversation_id)] = max(seq, self._tails.get((tenant, conversation_id), -1))

    async def _kept(self, tenant: str | None, conversation_id: str, ids: list[str]) -> list[_Row]:
        try:
            return self._ordered(await self._conversation(tenant, conversation_id).get(ids))
        except CollectionNotFoundError:
            return []

    async def _tail(self, tenant: str | None, conversation_id: str) -> int:
        """The conversation's highest seq (-1 when empty), read from the latest version."""
        known = self._tails.get((tenant, conversation_id))
        if known is not None:
            # Usually the row known last and nothing after it: read only from there on.
            rows = await self._read(
                self._conversation(tenant, conversation_id).where("metadata.seq", ">=", known)
            )
            if rows:
                return rows[-1].seq
        rows = await self._read(self._conversation(tenant, conversation_id))
        tail = rows[-1].seq if rows else -1
        if tail >= _MAX_SEQ:  # pragma: no cover - 2**53 messages in one conversation
            raise UsageError(
                f"Conversation {conversation_id!r} has no sequence numbers left.", code="E_INVALID_MESSAGE"
            )
        return tail

    async def _pop_locked(self, tenant: str | None, conversation_id: str) -> Message | None:
        async with self._writing():
            rows = await self._read(self._conversation(tenant, conversation_id))
            if not rows:
                return None
            last = rows[-1]
            await self._scoped(tenant).where_in("id", [last.record_id]).delete()
            return last.message

    async def _clear_locked(self, tenant: str | None, conversation_id: str) -> int:
        async with self._writing():
            try:
                removed = (
                    await self._scoped(tenant).where("metadata.conversation_id", conversation_id).delete()
                )
            except CollectionNotFoundError:
                removed = 0
            self._tails.pop((tenant, conversation_id), None)
            return removed

    def _recalled(self, match: VectorMatch) -> Retrievable | None:
        row = self._row(match)
        if row is None:
            return None
        tier: TrustTier = self.trust_tier
        if row.tier is not None:
            try:
                stored = validate_trust_tier(row.tier)
            except TurnkitError:
                log.warning(
                    "collection %r: skipped record %r with unknown tier %r",
                    self.collection,
                    row.record_id,
                    row.tier,
                )
                return None
            if trust_rank(stored) > trust_rank(tier):
                tier = stored  # never more trusted than it was written as
        message = row.message
        return Retrievable(
            id=row.record_id,
            content=match.document or "",
            trust_tier=tier,
            source=f"conversation {row.conversation_id}",
            kind="message",
            score=match.score,
            created_at=message.created_at,
            updated_at=message.updated_at,
            metadata={"role": message.role, "conversation_id": row.conversation_id, "message_id": message.id},
        )


def _is_name(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _checked_id(conversation_id: object) -> str:
    return expect_text(conversation_id, "conversation_id", _context_error, field="conversation_id")


class _MessageStoreOptions(TypedDict):
    """`VectorMessageStore`'s keyword arguments, for type checkers (the defaults are its own)."""

    store: VectorStore
    collection: str
    tenant: NotRequired[TenantRule | None]
    window: NotRequired[int | None]
    recall: NotRequired[bool | SettingsInput]
    recall_scope: NotRequired[RecallScope]
    trust_tier: NotRequired[TrustTier]


def create_vector_message_store(**options: Unpack[_MessageStoreOptions]) -> VectorMessageStore:
    """A `TurnRunner`'s ``fetch_messages`` and ``store_message``, backed by one collection.

    Example:
        ```python
        from turnkit import ScriptedModel, TurnRunner, TurnRunnerConfig
        from turnkit.batteries.vector import HashEncoder, create_vector_message_store, create_vector_store

        vs = create_vector_store(uri="memory://", encoder=HashEncoder())
        history = create_vector_message_store(store=vs, collection="chat")
        runner = TurnRunner(TurnRunnerConfig(model=ScriptedModel(["hi"]), **history))
        ```

    Args:
        store: The `VectorStore` (its encoder encodes every message, for recall).
        collection: The collection to keep messages in (one history per
            ``conversation_id`` inside it).
        tenant: ``None`` (no scope), a tenant name, or ``fn(ctx) -> str``
            called for every read and write of a turn. Every read and write of
            a tenant goes through its guard (``metadata.tenant == tenant``): a
            tenant never reads or overwrites another's conversation, even one
            with the same ``conversation_id``.
        window: ``fetch_messages`` returns at most the latest ``window``
            messages; older ones stay stored (and recallable). ``None``: all.
        recall: ``True`` or `RetrievalSettings` (a dict of its fields) turn on
            `VectorMessageStore.recall_stage`: the turn's user message searches
            past messages outside the window with these settings.
        recall_scope: ``"conversation"`` (default) or ``"all"``: every
            conversation the store may read (the tenant's, with a tenant).
        trust_tier: The tier of recalled messages, written with each message:
            what users and models wrote is not vetted, so ``"third-party"`` by
            default and fenced in the prompt. A message is never recalled more
            trusted than the tier it was written with.

    Returns:
        A `VectorMessageStore`, which unpacks into ``TurnRunnerConfig(**history)``.

    Raises:
        VectorStoreUsageError: ``E_INVALID_RETRIEVABLE_GLUE_CONFIG``: an option is unusable (``field`` names
            it).
        VectorStoreUsageError: ``E_VECTOR_STORE_INVALID_COLLECTION_NAME``: ``collection`` is not a valid name.
    """
    return VectorMessageStore(**options)
