"""`Retrievable`, `RawRetrievable` and trust tiers: the unit of retrieved context.

A trust tier is a *deployer assertion* about how far the runtime may trust a
piece of content. turnkit never defaults one and never infers one from the data
(a `source` that "looks internal" is exactly what an attacker would forge), so
the tier is a required field of `Retrievable` and the only field
`RawRetrievable` lacks: the code that turns raw matches into `Retrievable`
records states the tier, in code a reviewer can read.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import UTC, datetime
from functools import partial
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    Literal,
    NotRequired,
    Self,
    TypedDict,
    Unpack,
    cast,
    get_args,
)

from pydantic import (
    ConfigDict,
    Field,
    JsonValue,
    StrictStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ._errors import TrustTierRequiredError, TurnkitError, UnknownTrustTierError, UsageError
from ._messages import UtcDatetime
from ._validation import CheckedModel

__all__ = [
    "TRUST_TIERS",
    "RawRetrievable",
    "Retrievable",
    "RetrievableSet",
    "TrustTier",
    "as_retrievable",
    "trust_rank",
    "validate_trust_tier",
]

_retrievable_error = partial(UsageError, code="E_INVALID_RETRIEVABLE")

TrustTier = Literal["first-party", "third-party"]
"""The closed set of trust tiers.

``"first-party"``: content the deployer vetted (their own docs, a curated
corpus). ``"third-party"``: anything else (web pages, uploads, partner APIs,
user-generated records). Rendered as untrusted data.
"""

TRUST_TIERS: tuple[TrustTier, ...] = get_args(TrustTier)
"""Every trust tier, most trusted first (the order is the trust order)."""

_TIER_RANK: dict[str, int] = {tier: rank for rank, tier in enumerate(TRUST_TIERS)}


def validate_trust_tier(value: object) -> TrustTier:
    """Check that ``value`` is a known trust tier and return it.

    Args:
        value: The candidate tier.

    Returns:
        The tier, typed as `TrustTier`.

    Raises:
        TrustTierRequiredError: ``value`` is ``None``; a tier must be stated.
        UnknownTrustTierError: ``value`` is not one of `TRUST_TIERS` (spelling
            counts: tiers are compared exactly, never normalised).
    """
    if value is None:
        raise TrustTierRequiredError("A trust tier is required and was not given.")
    # Exact comparison on purpose: "First-Party" or " first-party" is a typo to
    # report, not something to quietly normalise into the most trusted tier.
    if not isinstance(value, str) or value not in _TIER_RANK:
        raise UnknownTrustTierError(
            f"Unknown trust tier {value!r}; expected one of {', '.join(map(repr, TRUST_TIERS))}.",
            tier=repr(value),
        )
    return cast(TrustTier, value)


def trust_rank(tier: str) -> int:
    """Return the position of ``tier`` in the trust order (0 is most trusted).

    Args:
        tier: A trust tier.

    Raises:
        TrustTierRequiredError: ``tier`` is ``None``.
        UnknownTrustTierError: ``tier`` is not a known tier.
    """
    return _TIER_RANK[validate_trust_tier(tier)]


_TIME_FORMS = "a datetime, an ISO-8601 string or epoch seconds"
_Score = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]

Timestamp = datetime | str | int | float
"""What a timestamp field accepts: an aware datetime, an ISO-8601 string with an
offset, or epoch seconds."""


class _RawInput(TypedDict):
    """What `RawRetrievable` accepts, for type checkers."""

    id: str
    content: str
    source: NotRequired[str | None]
    kind: NotRequired[str | None]
    score: NotRequired[float | None]
    created_at: NotRequired[Timestamp]
    updated_at: NotRequired[Timestamp | None]
    metadata: NotRequired[Mapping[str, Any]]


class _Input(_RawInput):
    """What `Retrievable` accepts, for type checkers."""

    trust_tier: TrustTier


class _RetrievableFields(CheckedModel):
    """Fields and checks shared by `RawRetrievable` and `Retrievable`."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)
    invalid_error = _retrievable_error

    # Strict strings: pydantic would otherwise decode bytes into text silently.
    id: StrictStr
    """Stable identifier of the record (its key in the backing store). Shown to
    the model so it can cite; never used as a secret."""
    content: StrictStr
    """The text to put in front of the model; non-empty and not just whitespace."""
    source: StrictStr | None = None
    """Where the content came from (a path, URL, title); shown for citation."""
    kind: StrictStr | None = None
    """A free-form label (``"doc"``, ``"faq"``, ``"web"``…)."""
    score: _Score | None = None
    """Relevance in [0, 1], higher is better; ``None`` ranks after every score."""
    created_at: UtcDatetime = Field(default_factory=lambda: datetime.now(UTC))
    """When the record was created: an aware datetime, an ISO-8601 string with an
    offset, or epoch seconds. Stored in UTC. Defaults to now."""
    updated_at: UtcDatetime | None = None
    """When the record last changed (same forms as ``created_at``). Defaults to
    ``created_at``."""
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    """JSON-compatible extra data (finite numbers only). Treat it as read-only."""

    @field_validator("id", "content")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must be a non-empty string")
        return value

    @field_validator("score", "created_at", "updated_at", mode="before")
    @classmethod
    def _no_bool(cls, value: object, info: ValidationInfo) -> object:
        # pydantic would read True as 1.0 (or as epoch second 1): a bool here is a bug upstream.
        if isinstance(value, bool):
            what = "a number in [0, 1]" if info.field_name == "score" else _TIME_FORMS
            raise ValueError(f"must be {what}, not a bool")
        return value

    @field_validator("metadata")
    @classmethod
    def _json_safe(cls, value: dict[str, JsonValue]) -> dict[str, JsonValue]:
        # JsonValue lets NaN/inf through; they are not JSON and break every store.
        try:
            json.dumps(value, allow_nan=False)
        except ValueError as exc:
            raise ValueError("must be JSON-compatible (NaN and infinity are not)") from exc
        return value

    @model_validator(mode="after")
    def _default_updated_at(self) -> Self:
        if self.updated_at is None:
            # Frozen model: set the default through object.__setattr__ during validation.
            object.__setattr__(self, "updated_at", self.created_at)
        return self

    @classmethod
    def invalid(cls, message: str, field: str, exc: ValidationError | None = None) -> TurnkitError:
        errors = [] if exc is None else exc.errors(include_url=False)
        return _retrievable_error(message, field=field, errors=errors)

    def __hash__(self) -> int:
        # Equal records share id, content and tier; metadata (a dict) is not hashable.
        return hash((type(self).__name__, self.id, self.content, getattr(self, "trust_tier", None)))

    def replace(self, **changes: Any) -> Self:
        """Return a validated copy with ``changes`` applied.

        Unlike pydantic's ``model_copy(update=...)``, the result is validated,
        so an invalid change raises instead of producing a broken record.

        Raises:
            UsageError: ``E_INVALID_RETRIEVABLE``: a changed value is invalid.
        """
        data = self.model_dump()
        data.update(changes)
        return type(self).model_validate(data)


class RawRetrievable(_RetrievableFields):
    """A retrieved record *before* the deployer states its trust tier.

    Retrieval code that does not know how far to trust its results (a vector
    store mapping hits, a web search) returns these; the code that owns the
    policy turns them into `Retrievable` with `Retrievable.from_raw`.

    Example:
        ```python
        raw = RawRetrievable(id="doc-1", content="Refunds take 5 days.", source="faq.md")
        r = Retrievable.from_raw(raw, trust_tier="first-party")
        ```

    Raises:
        UsageError: ``E_INVALID_RETRIEVABLE``: a field is missing or invalid (the message
            names it), or ``trust_tier`` was passed.
    """

    @classmethod
    def _check_input(cls, data: Any) -> None:
        if isinstance(data, Mapping) and "trust_tier" in data:
            raise _retrievable_error(
                "RawRetrievable has no 'trust_tier' field.",
                hint="Build a `Retrievable` instead, or use `Retrievable.from_raw(raw, trust_tier=...)`.",
                field="trust_tier",
            )

    if TYPE_CHECKING:
        # The accepted input types (pydantic's generated signature would claim
        # `created_at: datetime` only, and strict type checkers would reject ISO strings).
        def __init__(self, **data: Unpack[_RawInput]) -> None: ...


class Retrievable(_RetrievableFields):
    """A retrieved record with the trust tier its deployer assigned.

    Immutable (a frozen pydantic model); `replace` returns a validated copy.
    ``model_dump()`` / ``model_validate()`` round-trip exactly, and
    ``model_dump(mode="json")`` is JSON-safe.

    Example:
        ```python
        r = Retrievable(
            id="doc-1",
            content="Refunds take 5 days.",
            trust_tier="first-party",
            source="faq.md",
            score=0.82,
            created_at="2024-05-01T09:00:00Z",
        )
        ```

    Raises:
        TrustTierRequiredError: ``trust_tier`` is missing or ``None``.
        UnknownTrustTierError: ``trust_tier`` is not one of `TRUST_TIERS`.
        UsageError: ``E_INVALID_RETRIEVABLE``: another field is missing or invalid (the
            message names it).
    """

    trust_tier: TrustTier
    """The deployer's assertion of how far to trust ``content``. Required;
    never defaulted, never inferred from the data."""

    if TYPE_CHECKING:

        def __init__(self, **data: Unpack[_Input]) -> None: ...

    @classmethod
    def _check_input(cls, data: Any) -> None:
        # The tier errors get their own classes (and codes) because they are
        # security decisions a caller may want to catch separately.
        if isinstance(data, Mapping):
            validate_trust_tier(data.get("trust_tier"))

    @classmethod
    def from_raw(
        cls,
        raw: RawRetrievable | Retrievable | Mapping[str, Any],
        *,
        trust_tier: TrustTier | str,
    ) -> Retrievable:
        """Build a `Retrievable` from a raw record and the tier you assert for it.

        Any tier already on ``raw`` (a `Retrievable`, or a ``trust_tier`` key in
        a mapping) is ignored: the tier given here is the one that counts.

        Args:
            raw: A `RawRetrievable`, a `Retrievable`, or a mapping of fields.
            trust_tier: The tier to assign; required.

        Raises:
            TrustTierRequiredError: ``trust_tier`` is ``None``.
            UnknownTrustTierError: ``trust_tier`` is unknown.
            UsageError: ``E_INVALID_RETRIEVABLE``: ``raw`` has a missing or invalid field.
        """
        tier = validate_trust_tier(trust_tier)
        if isinstance(raw, _RetrievableFields):
            data = raw.model_dump()
        elif isinstance(raw, Mapping):
            data = dict(raw)
        else:
            raise _retrievable_error(
                f"Cannot build a Retrievable from {type(raw).__name__}; pass a RawRetrievable or a mapping.",
                field="<root>",
            )
        data["trust_tier"] = tier
        return cls.model_validate(data)

    def to_raw(self) -> RawRetrievable:
        """Return the same record without its trust tier."""
        data = self.model_dump()
        del data["trust_tier"]
        return RawRetrievable.model_validate(data)


def as_retrievable(value: object, *, where: str) -> Retrievable:
    """Check that a callback handed back a real `Retrievable`.

    Args:
        value: What the callback returned.
        where: Names the callback and position for the error message.

    Raises:
        TrustTierRequiredError: ``value`` is a `RawRetrievable` (no tier).
        UsageError: ``E_INVALID_RETRIEVABLE``: ``value`` is anything else.
    """
    if isinstance(value, Retrievable):
        return value
    if isinstance(value, RawRetrievable):
        raise TrustTierRequiredError(
            f"{where} is a RawRetrievable with no trust tier.",
            hint="Assign a tier explicitly: `Retrievable.from_raw(raw, trust_tier=...)`.",
            id=value.id,
        )
    raise _retrievable_error(
        f"{where} is a {type(value).__name__}, not a Retrievable.",
        hint="Return `turnkit.Retrievable` instances (build them with an explicit trust_tier).",
    )


class RetrievableSet:
    """The ordered, id-keyed set of retrievables a turn will render.

    Order is insertion order. Adding a record whose id is already present
    replaces it *in place* (the position is kept), so mutating a record never
    duplicates it or moves it to the end.
    """

    __slots__ = ("_items",)

    def __init__(self, items: Iterable[Retrievable] = ()) -> None:
        self._items: dict[str, Retrievable] = {}
        self.extend(items)

    def add(self, retrievable: Retrievable) -> None:
        """Add a record, or replace the one with the same id where it stands.

        Raises:
            TrustTierRequiredError: ``retrievable`` is a `RawRetrievable`.
            UsageError: ``E_INVALID_RETRIEVABLE``: ``retrievable`` is not a `Retrievable`.
        """
        r = as_retrievable(retrievable, where="The record added to turn_retrievables")
        self._items[r.id] = r

    def extend(self, retrievables: Iterable[Retrievable]) -> None:
        """Add each record in order (see `add`)."""
        for r in retrievables:
            self.add(r)

    def replace(self, retrievable: Retrievable) -> bool:
        """Replace the record with the same id in place.

        Returns:
            ``True`` if a record was replaced, ``False`` if the id was absent
            (nothing is added then).
        """
        r = as_retrievable(retrievable, where="The replacement record")
        if r.id not in self._items:
            return False
        self._items[r.id] = r
        return True

    def discard(self, id: str) -> bool:
        """Remove the record with this id; return whether it was present."""
        return self._items.pop(id, None) is not None

    def remove(self, id: str) -> None:
        """Remove the record with this id.

        Raises:
            KeyError: no record has this id.
        """
        del self._items[id]

    def get(self, id: str) -> Retrievable | None:
        """Return the record with this id, or ``None``."""
        return self._items.get(id)

    def clear(self) -> None:
        """Remove every record."""
        self._items.clear()

    def filter(self, keep: Callable[[Retrievable], bool]) -> None:
        """Keep only the records for which ``keep`` returns true (order is kept)."""
        self._items = {k: v for k, v in self._items.items() if keep(v)}

    @property
    def ids(self) -> list[str]:
        """The ids, in order."""
        return list(self._items)

    def to_list(self) -> list[Retrievable]:
        """The records, in order."""
        return list(self._items.values())

    def __contains__(self, item: object) -> bool:
        if isinstance(item, Retrievable):
            return self._items.get(item.id) == item
        return item in self._items

    def __iter__(self) -> Iterator[Retrievable]:
        return iter(list(self._items.values()))

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, index: int) -> Retrievable:
        return list(self._items.values())[index]

    def __repr__(self) -> str:
        return f"RetrievableSet({self.ids!r})"


def rank_order(retrievables: Iterable[Retrievable]) -> list[Retrievable]:
    """Sort by score descending (``None`` last); ties keep their original order."""
    return sorted(retrievables, key=lambda r: (r.score is None, -(r.score or 0.0)))
