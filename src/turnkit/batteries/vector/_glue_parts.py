"""The retrieval glue's types, errors and option checks (the glue itself is in ``_callbacks``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeAlias

import numpy.typing as npt

from turnkit._context import TurnContext
from turnkit._retrievable import RawRetrievable, Retrievable
from turnkit.batteries.vector._matches import VectorMatch
from turnkit.batteries.vector._sources import source_of
from turnkit.batteries.vector.filters._ast import FilterNode

if TYPE_CHECKING:
    from turnkit.batteries.vector._callbacks import VectorRetrievableGlue

__all__ = [
    "GLUE_METADATA_KEYS",
    "CallbackMapping",
    "DeriveQuery",
    "FilterSpec",
    "QueryValue",
    "RawResult",
    "TierFunction",
    "ToRetrievable",
    "VectorRetrievableCallbacks",
    "declared_tier",
    "source_of",
]

QueryValue: TypeAlias = str | Sequence[float] | npt.NDArray[Any]
"""What ``derive_query`` returns besides ``None``: text (the store encodes it) or a query vector."""
DeriveQuery: TypeAlias = Callable[[TurnContext], QueryValue | None | Awaitable[QueryValue | None]]
"""``derive_query(ctx)``: sync or async; ``None`` skips retrieval this turn."""
RawResult: TypeAlias = RawRetrievable | Retrievable | Mapping[str, Any] | None
"""What ``to_retrievable`` returns: the record minus its tier, or ``None`` to drop the match."""
ToRetrievable: TypeAlias = Callable[[VectorMatch], RawResult | Awaitable[RawResult]]
"""``to_retrievable(match)``: sync or async."""
TierFunction: TypeAlias = Callable[[VectorMatch], str | Awaitable[str]]
"""``trust_tier(match)``: the deployer's rule for a collection that mixes provenance."""
FilterSpec: TypeAlias = (
    FilterNode | Mapping[str, Any] | tuple[str, Sequence[Any]] | str | Callable[[Any], Any]
)
"""A filter node, a Mongo-style dict, a raw ``(sql, bindings)`` pair or SQL string, or a group callable."""

GLUE_METADATA_KEYS: tuple[str, ...] = ("trust_tier", "source", "kind", "created_at", "updated_at")
"""Metadata keys the glue writes on store and reads back on fetch; they are not user metadata."""


class CallbackMapping(Mapping[str, Any]):
    """Callbacks that unpack into `TurnRunnerConfig`: a mapping of the attributes ``NAMES`` lists."""

    NAMES: ClassVar[tuple[str, ...]]

    def __getitem__(self, key: str) -> Any:
        if key not in self.NAMES:
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(self.NAMES)

    def __len__(self) -> int:
        return len(self.NAMES)


@dataclass(frozen=True)
class VectorRetrievableCallbacks(CallbackMapping):
    """The four retrieval callbacks, by attribute and by name.

    It is a read-only mapping of the `TurnRunnerConfig` field names, so
    ``TurnRunnerConfig(model=..., **callbacks)`` wires all four.

    Attributes:
        fetch_retrievables: ``async (ctx) -> list[Retrievable]``.
        store_retrievable: ``async (ctx, r) -> None``.
        mutate_retrievable: ``async (ctx, r) -> None``.
        delete_retrievable: ``async (ctx, id) -> None``.
        glue: The `VectorRetrievableGlue` behind them.
    """

    fetch_retrievables: Callable[[TurnContext], Awaitable[list[Retrievable]]]
    store_retrievable: Callable[[TurnContext, Retrievable], Awaitable[None]]
    mutate_retrievable: Callable[[TurnContext, Retrievable], Awaitable[None]]
    delete_retrievable: Callable[[TurnContext, str], Awaitable[None]]
    glue: VectorRetrievableGlue

    NAMES: ClassVar[tuple[str, ...]] = (
        "fetch_retrievables",
        "store_retrievable",
        "mutate_retrievable",
        "delete_retrievable",
    )


def declared_tier(raw: RawResult, match: VectorMatch) -> str | None:
    """The tier a record already carries: from the hook's result, else from the stored metadata."""
    if isinstance(raw, Retrievable):
        return raw.trust_tier
    if isinstance(raw, Mapping) and raw.get("trust_tier") is not None:
        return str(raw["trust_tier"])
    stored = (match.metadata or {}).get("trust_tier")
    return None if stored is None else str(stored)
