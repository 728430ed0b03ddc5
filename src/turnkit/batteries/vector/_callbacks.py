"""Retrieval glue: a collection of the vector store as a `TurnRunner`'s four retrievable callbacks.

A runner knows ``fetch_retrievables``, ``store_retrievable``,
``mutate_retrievable`` and ``delete_retrievable``; it does not know what a
vector database is. `create_vector_retrievable_callbacks` adapts one to the
other. Subclass `VectorRetrievableGlue` to change how a turn becomes a query
(``derive_query``) or how a match becomes a record (``to_retrievable``).
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Awaitable, Sequence
from functools import partial
from typing import Any, NotRequired, TypedDict, Unpack

import numpy as np

from turnkit._aio import call_maybe_async
from turnkit._checks import STORE_HINT, expect
from turnkit._context import TurnContext, invoke
from turnkit._errors import TrustTierRequiredError, UnknownTrustTierError, UsageError
from turnkit._retrievable import (
    TRUST_TIERS,
    RawRetrievable,
    Retrievable,
    TrustTier,
    as_retrievable,
    trust_rank,
    validate_trust_tier,
)
from turnkit._runner import GROUNDING_STASH_KEY
from turnkit.batteries.vector._errors import (
    CollectionNotFoundError,
    FilterKeyNotFoundError,
    InvalidRankingConfigError,
    RetrievableSkippedWarning,
    VectorStoreUsageError,
)
from turnkit.batteries.vector._glue_parts import (
    GLUE_METADATA_KEYS,
    DeriveQuery,
    FilterSpec,
    QueryValue,
    RawResult,
    TierFunction,
    ToRetrievable,
    VectorRetrievableCallbacks,
    declared_tier,
    source_of,
)
from turnkit.batteries.vector._matches import VectorMatch, VectorRecord
from turnkit.batteries.vector._retrieve import Retrieval, retrieve
from turnkit.batteries.vector._settings import RetrievalSettings, SettingsInput
from turnkit.batteries.vector.query._builder import QueryBuilder
from turnkit.batteries.vector.ranking._abstain import grounding_verdict
from turnkit.batteries.vector.ranking._scorers import local_scorer
from turnkit.batteries.vector.store._store import VectorStore

__all__ = [
    "GLUE_METADATA_KEYS",
    "RetrievableSkippedWarning",
    "VectorRetrievableCallbacks",
    "VectorRetrievableGlue",
    "create_vector_retrievable_callbacks",
]

_config_error = partial(VectorStoreUsageError, code="E_INVALID_RETRIEVABLE_GLUE_CONFIG")

log = logging.getLogger("turnkit.vector.retrievables")

_SELECT = ("id", "document", "metadata", "created_at", "updated_at")


class VectorRetrievableGlue:
    """One collection of a `VectorStore` as retrievable callbacks; subclass it to change the hooks.

    ``create_vector_retrievable_callbacks(...)`` is
    ``VectorRetrievableGlue(...).callbacks()``. Override `derive_query`,
    `to_retrievable` or `to_record` (sync or async) in a subclass, or pass
    ``derive_query=`` / ``to_retrievable=`` functions.

    Args:
        store: The `VectorStore` (from `create_vector_store`).
        collection: The collection to search and write.
        trust_tier: Required. A tier for every match, or a function of the
            `VectorMatch` returning one (sync or async). A record is never
            returned more trusted than the ``trust_tier`` it was stored with.
        top_k: Most matches per fetch.
        filter: ANDed to every search: a filter node (``condition(...)``,
            ``and_(...)``…), a Mongo-style dict (as for ``where(dict)``), a
            raw ``(sql, bindings)`` pair, SQL string or `Raw`, or a group callable.
        derive_query: ``(ctx) -> str | vector | None`` (sync or async). The
            default is the last user message; ``None`` skips retrieval.
        to_retrievable: ``(match) -> RawRetrievable | mapping | None`` (sync
            or async); replaces the default mapping.
        min_score: Shorthand for ``settings={"min_score": ...}``: matches whose
            dense similarity (in [0, 1]) is below it are not returned. When
            nothing is left, fetch returns ``[]`` and marks the turn
            ungrounded: a `TurnRunner` with the default input stage stops
            before the model call with ``stop_reason == NO_GROUNDED_ANSWER``.
        abstain_reply: The turn's reply when it abstains (needs ``min_score``).
        settings: `RetrievalSettings` (or a dict of its fields) for every other
            knob: hybrid search, duplicate collapse, rerank, diversify, index
            knobs. The default is turnkit's measured best: hybrid search with
            duplicate texts collapsed (``{"hybrid": False}`` is vector-only).
            ``top_k``, ``filter`` and ``min_score`` above override its fields.

    Raises:
        TrustTierRequiredError: ``trust_tier`` was not given.
        UnknownTrustTierError: ``trust_tier`` is a string outside `turnkit.TRUST_TIERS`.
        VectorStoreUsageError: ``E_INVALID_RETRIEVABLE_GLUE_CONFIG``: another option is unusable.
        InvalidFilterError: ``filter`` is malformed (checked now, not at the first turn).
    """

    def __init__(
        self,
        *,
        store: VectorStore,
        collection: str,
        trust_tier: TrustTier | TierFunction | None = None,
        top_k: int | None = None,
        filter: FilterSpec | None = None,
        derive_query: DeriveQuery | None = None,
        to_retrievable: ToRetrievable | None = None,
        min_score: float | None = None,
        abstain_reply: str | None = None,
        settings: SettingsInput = None,
    ) -> None:
        if trust_tier is None:
            raise TrustTierRequiredError(
                f"create_vector_retrievable_callbacks() for collection {collection!r} needs trust_tier=.",
                collection=collection,
            )
        self._tier_fn: TierFunction | None = trust_tier if callable(trust_tier) else None
        self._tier: TrustTier | None = None if callable(trust_tier) else validate_trust_tier(trust_tier)
        expect(store, VectorStore, "store", _config_error, STORE_HINT, field="store")
        for name, hook in (("derive_query", derive_query), ("to_retrievable", to_retrievable)):
            if hook is not None and not callable(hook):
                raise _config_error(f"{name} must be a function, got {type(hook).__name__}.", field=name)
        shorthands = {
            name: value
            for name, value in (("top_k", top_k), ("filter", filter), ("min_score", min_score))
            if value is not None
        }
        try:
            self.settings = RetrievalSettings.of(settings).merge(shorthands)
            # Resolved now so a missing encoder or extra fails at creation, not mid-turn.
            if self.settings.rerank is not None and self.settings.rerank_model is None:
                scorer = self.settings.rerank_scorer
                if scorer is None or isinstance(scorer, str):
                    self.settings = self.settings.merge(
                        rerank_scorer=local_scorer(store.encoder, scorer or "auto")  # type: ignore[arg-type]
                    )
        except InvalidRankingConfigError as exc:
            raise _config_error(
                exc.message, hint=exc.hint, field=exc.context.get("field", "settings")
            ) from None
        if abstain_reply is not None and (not isinstance(abstain_reply, str) or not abstain_reply.strip()):
            raise _config_error(
                f"abstain_reply must be a non-empty string or None, got {abstain_reply!r}.",
                field="abstain_reply",
            )
        if abstain_reply is not None and self.settings.min_score is None:
            raise _config_error(
                "abstain_reply needs min_score: without a threshold the callbacks never abstain.",
                field="abstain_reply",
            )
        store(collection)  # a bad collection name fails at creation, not mid-turn
        self.store = store
        self.collection = collection
        self.abstain_reply = abstain_reply
        self._derive_query = derive_query
        self._to_retrievable = to_retrievable

    @property
    def top_k(self) -> int:
        """Most records per fetch."""
        return self.settings.top_k

    @property
    def min_score(self) -> float | None:
        """The dense similarity a match must clear (``None``: no threshold)."""
        return self.settings.min_score

    def __repr__(self) -> str:
        tier = self._tier if self._tier is not None else "<function>"
        name = type(self).__name__
        return f"<{name} collection={self.collection!r} trust_tier={tier!r} top_k={self.top_k}>"

    def callbacks(self) -> VectorRetrievableCallbacks:
        """The four callbacks, bound to this glue."""
        return VectorRetrievableCallbacks(
            fetch_retrievables=self.fetch_retrievables,
            store_retrievable=self.store_retrievable,
            mutate_retrievable=self.mutate_retrievable,
            delete_retrievable=self.delete_retrievable,
            glue=self,
        )

    # -- hooks ------------------------------------------------------------------------
    async def derive_query(self, ctx: TurnContext) -> QueryValue | None:
        """The query for this turn: text, a vector, or ``None`` to retrieve nothing.

        Default: the ``derive_query`` function if one was given, else the
        content of the last ``user`` message of the conversation (``None``
        when there is none).
        """
        if self._derive_query is not None:
            result: QueryValue | None = await invoke(self._derive_query, ctx)
            return result
        return await _question(ctx)

    def to_retrievable(self, match: VectorMatch) -> RawResult | Awaitable[RawResult]:
        """Map a match to a `RawRetrievable` (the tier is applied by the glue).

        Default: the ``to_retrievable`` function if one was given, else
        ``id``; ``content`` from the document; ``kind`` from the metadata when
        it is a string; ``score``; the rest of the metadata (an ingested
        chunk's ``page_span`` included) as ``metadata``. ``source`` is the
        metadata's ``source`` when the glue stored the record, else the name
        `turnkit.ingest` gave the file (``source_display_name``, else
        ``source_uri``) followed by ``§`` and its heading path (``section``)
        and, for paged input, its pages (``manual.pdf (pp. 3–4)``).
        ``created_at`` and ``updated_at`` are the glue's own (in the metadata),
        else the record's stored timestamps. When copies of the text were
        collapsed into the match, ``metadata["duplicates"]`` lists where they
        are (their sources, else their ids). Return ``None`` to drop a match on purpose.

        Raises:
            UsageError: ``E_INVALID_RETRIEVABLE``: the match cannot make a valid record
                (the glue skips it with a `RetrievableSkippedWarning`).
        """
        if self._to_retrievable is not None:
            return self._to_retrievable(match)
        meta = match.metadata or {}
        fields: dict[str, Any] = {
            "id": match.id,
            "content": match.document if match.document is not None else "",
            "score": match.score,
            "metadata": {k: v for k, v in meta.items() if k not in GLUE_METADATA_KEYS},
        }
        if isinstance(meta.get("kind"), str):
            fields["kind"] = meta["kind"]
        source = source_of(meta)
        if source is not None:
            fields["source"] = source
        if match.duplicates:
            # The copies collapsed into this match: where else the same text is, so nothing is hidden.
            fields["metadata"]["duplicates"] = [source_of(d.metadata or {}) or d.id for d in match.duplicates]
        for key in ("created_at", "updated_at"):
            stamp = meta.get(key) if meta.get(key) is not None else getattr(match, key, None)
            if stamp is not None:
                fields[key] = stamp
        return RawRetrievable.model_validate(fields)

    def to_record(self, retrievable: Retrievable) -> VectorRecord:
        """Map a `Retrievable` to the record upserted by store and mutate.

        The document is the content, with no vector (the store encodes it);
        the metadata is the record's own plus `GLUE_METADATA_KEYS`.

        Raises:
            VectorStoreUsageError: ``E_VECTOR_GLUE_RESERVED_METADATA_KEY``: the record's metadata holds one of
                `GLUE_METADATA_KEYS` with a value that would read back differently.
        """
        r = retrievable
        assert r.updated_at is not None  # Retrievable defaults it to created_at
        glue_meta: dict[str, Any] = {
            "trust_tier": r.trust_tier,
            "created_at": r.created_at.isoformat(),
            "updated_at": r.updated_at.isoformat(),
        }
        if r.source is not None:
            glue_meta["source"] = r.source
        if r.kind is not None:
            glue_meta["kind"] = r.kind
        for key in GLUE_METADATA_KEYS:
            # Even an equal value: fetch reads these keys into the record's own
            # fields, so the metadata would not come back as it went in.
            if key in r.metadata:
                raise VectorStoreUsageError(
                    f"Record {r.id!r}: metadata key {key!r} is written by the glue from the record's "
                    "own fields; it would not read back as metadata.",
                    code="E_VECTOR_GLUE_RESERVED_METADATA_KEY",
                    record_id=r.id,
                    key=key,
                )
        return {
            "id": r.id,
            "document": r.content,
            "metadata": {**r.metadata, **glue_meta},
            "created_at": r.created_at,
            "updated_at": r.updated_at,
        }

    # -- callbacks --------------------------------------------------------------------
    async def fetch_retrievables(self, ctx: TurnContext) -> list[Retrievable]:
        """Derive a query from the turn, search the collection, map the matches.

        ``near_text`` (or ``near_vector``) → the settings' steps (hybrid
        search, ``filter``, duplicate collapse, rerank…) → ``select("id",
        "document", "metadata")`` → ``top_k``: the one pipeline, `retrieve`.
        A missing collection gives ``[]``, and so does a ``filter`` on a
        key no record holds yet (logged at INFO); so does a turn with nothing to
        search for. A vector query has no full-text leg; its reranker reads
        the last user message. With ``min_score``, the turn's grounding
        verdict goes to ``ctx.stash[GROUNDING_STASH_KEY]``.

        Raises:
            UnknownTrustTierError: the ``trust_tier`` function returned an
                unknown tier (the message names the match).
            EncoderRequiredError: a text query on a store with no encoder.
        """
        query = await invoke(self.derive_query, ctx)
        if query is None or (isinstance(query, str) and not query.strip()):
            return []
        settings, words = self.settings, query
        if not isinstance(query, str):
            # A vector query has no words to match: no full-text leg; the reranker reads the question.
            settings, words = settings.merge(hybrid=None), await _question(ctx)
        q = self._near(self.store(self.collection), query).select(*_SELECT)
        try:
            found = await retrieve(q, settings, text=words, missing_ok=True)
        except FilterKeyNotFoundError as exc:
            # The deployer's filter names a key no record holds yet (a new tenant's first turn): the
            # turn has nothing to retrieve, as with a missing collection. Logged, never a failed turn.
            log.info("collection %r: %s", self.collection, exc.message)
            found = Retrieval([], settings=settings)
        out = [r for m in found.matches if (r := await self._build(m, await self._tier_for(m))) is not None]
        if self.min_score is not None:
            ctx.stash[GROUNDING_STASH_KEY] = grounding_verdict(
                found.candidates, out, self.min_score, reply=self.abstain_reply
            )
        return out

    async def store_retrievable(self, ctx: TurnContext, retrievable: Retrievable) -> None:
        """Upsert the record's text and metadata; the store encodes the text.

        A turn's context stores it at no more than ``ctx.write_tier``: what a
        turn writes is never stored first-party unless the deployer declared so.

        Raises:
            EncoderRequiredError: the store has no encoder.
            VectorStoreUsageError: ``E_VECTOR_GLUE_RESERVED_METADATA_KEY``: see `to_record`.
        """
        r = as_retrievable(retrievable, where="The record to store")
        if isinstance(ctx, TurnContext):  # also when the callback is called directly with a turn's context
            r = ctx.capped(r)
        record = await call_maybe_async(self.to_record, r)
        await self.store(self.collection).upsert([record])

    async def mutate_retrievable(self, ctx: TurnContext, retrievable: Retrievable) -> None:
        """Same as `store_retrievable`: an upsert replaces the record (and re-encodes it)."""
        await self.store_retrievable(ctx, retrievable)

    async def delete_retrievable(self, ctx: TurnContext, id: str) -> None:
        """Delete the record with this id (nothing happens if it, or the collection, is absent)."""
        if not isinstance(id, str) or not id:
            raise UsageError(
                f"delete_retrievable needs a non-empty string id, got {id!r}.", code="E_INVALID_RETRIEVABLE"
            )
        with contextlib.suppress(CollectionNotFoundError):
            await self.store(self.collection).where_in("id", [id]).delete()

    # -- internals ---------------------------------------------------------------------
    def _near(self, q: QueryBuilder, query: object) -> QueryBuilder:
        if isinstance(query, str):
            return q.near_text(query)
        if isinstance(query, np.ndarray) or (isinstance(query, Sequence) and not isinstance(query, bytes)):
            return q.near_vector(query)
        raise VectorStoreUsageError(
            f"derive_query returned {type(query).__name__}; it must return text, a vector or None.",
            code="E_VECTOR_STORE_INVALID_QUERY",
            hint="Return a str (encoded by the store), a list of floats, or None to skip retrieval.",
            collection=self.collection,
        )

    async def _tier_for(self, match: VectorMatch) -> TrustTier:
        if self._tier is not None:
            return self._tier
        assert self._tier_fn is not None
        value = await call_maybe_async(self._tier_fn, match)
        try:
            return validate_trust_tier(value)
        except (UnknownTrustTierError, TrustTierRequiredError) as exc:
            raise type(exc)(
                f"The trust_tier function returned {value!r} for match {match.id!r} "
                f"of collection {self.collection!r}; expected one of {', '.join(map(repr, TRUST_TIERS))}.",
                tier=repr(value),
                record_id=match.id,
                collection=self.collection,
            ) from exc

    async def _build(self, match: VectorMatch, tier: TrustTier) -> Retrievable | None:
        try:
            raw = await call_maybe_async(self.to_retrievable, match)
            if raw is None:
                return None
            record = Retrievable.from_raw(raw, trust_tier=tier)
        except UsageError as exc:
            if exc.code != "E_INVALID_RETRIEVABLE":
                raise
            self._skip(match, exc.message)
            return None
        stored = declared_tier(raw, match)
        if stored is not None and stored not in TRUST_TIERS:
            self._skip(match, f"its stored trust_tier {stored!r} is not a known tier")
            return None
        if stored is not None and trust_rank(stored) > trust_rank(tier):
            # Never more trusted than it was stored as: a flat collection tier
            # must not promote a third-party record someone wrote into it.
            record = record.replace(trust_tier=stored)
        return record

    def _skip(self, match: VectorMatch, reason: str) -> None:
        message = f"Skipped match {match.id!r} of collection {self.collection!r}: {reason}"
        log.warning(message, extra={"record_id": match.id, "collection": self.collection})
        warnings.warn(
            RetrievableSkippedWarning(message, record_id=match.id, collection=self.collection, reason=reason),
            stacklevel=2,
        )


async def _question(ctx: TurnContext) -> str | None:
    message = await ctx.last_user_message()
    return None if message is None else message.content


class _GlueOptions(TypedDict):
    """`VectorRetrievableGlue`'s keyword arguments, for type checkers (the defaults are its own)."""

    store: VectorStore
    collection: str
    trust_tier: NotRequired[TrustTier | TierFunction | None]
    top_k: NotRequired[int | None]
    filter: NotRequired[FilterSpec | None]
    derive_query: NotRequired[DeriveQuery | None]
    to_retrievable: NotRequired[ToRetrievable | None]
    min_score: NotRequired[float | None]
    abstain_reply: NotRequired[str | None]
    settings: NotRequired[SettingsInput]


def create_vector_retrievable_callbacks(**options: Unpack[_GlueOptions]) -> VectorRetrievableCallbacks:
    """The four retrievable callbacks of a `TurnRunner`, backed by one collection.

    Example:
        ```python
        from turnkit import ScriptedModel, TurnRunner, TurnRunnerConfig
        from turnkit.batteries.vector import (
            HashEncoder,
            create_vector_retrievable_callbacks,
            create_vector_store,
        )

        vs = create_vector_store(uri="memory://", encoder=HashEncoder())
        callbacks = create_vector_retrievable_callbacks(
            store=vs, collection="docs", trust_tier="first-party"
        )
        runner = TurnRunner(TurnRunnerConfig(model=ScriptedModel(["ok"]), **callbacks))
        ```

    Its options are `VectorRetrievableGlue`'s (see there for each one).

    Returns:
        A frozen `VectorRetrievableCallbacks`, which unpacks into
        ``TurnRunnerConfig(**callbacks)``.

    Raises:
        TrustTierRequiredError: ``trust_tier`` was not given.
        UnknownTrustTierError: ``trust_tier`` is not a known tier.
        VectorStoreUsageError: ``E_INVALID_RETRIEVABLE_GLUE_CONFIG``: ``store``, ``top_k``, ``filter``
            or a hook is unusable.
        InvalidFilterError: ``filter`` is malformed.
    """
    return VectorRetrievableGlue(**options).callbacks()
