"""``turnkit query``'s retrieval flags: one table from each flag to the `RetrievalSettings` field it sets.

The parser makes the flags from this table and `query_settings` reads them
back through it, so a flag, its help and its field are written once. A flag
not given leaves its field at the default of `RetrievalSettings`, the
measured-best retrieval every surface shares (docs/settings.md). The vector battery is
imported inside the functions, so ``turnkit --help`` never loads LanceDB.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._arg_types import alpha, positive_int, unit_float
from ._config import AUTO_ALPHA
from ._errors import CliUsageError

if TYPE_CHECKING:
    from ..batteries.vector import RetrievalSettings

__all__ = ["QUERY_FLAGS", "SettingsFlag", "add_query_flags", "query_settings", "settings_json"]


def _filter_value(value: Any) -> Any:
    from ..batteries.vector import parse_filter_expression

    return parse_filter_expression(value)


@dataclass(frozen=True, slots=True)
class SettingsFlag:
    """One flag of ``turnkit query`` and the `RetrievalSettings` field it sets.

    Attributes:
        flags: The option strings.
        field: The settings field.
        argparse: ``add_argument`` keywords (``type``, ``nargs``, ``action``, ``help``…).
        dest: Where argparse keeps the value; two spellings of one switch share it.
        key: For a knob given in parts (hybrid's ``alpha`` and ``fusion``), the
            key of the field's dict form this flag sets.
        value: The flag's value as the field's (or the key's) value.
    """

    flags: tuple[str, ...]
    field: str
    argparse: Mapping[str, Any]
    dest: str = ""
    key: str | None = None
    value: Callable[[Any], Any] | None = None

    @property
    def name(self) -> str:
        return self.dest or self.flags[-1].lstrip("-").replace("-", "_")


def _flag(flags: str | tuple[str, ...], field: str, **options: Any) -> SettingsFlag:
    """A `SettingsFlag` written as ``add_argument`` takes it; ``dest``, ``key`` and ``value`` are its own."""
    own = {name: options.pop(name) for name in ("dest", "key", "value") if name in options}
    return SettingsFlag(flags if isinstance(flags, tuple) else (flags,), field, options, **own)


QUERY_FLAGS: tuple[SettingsFlag, ...] = (
    _flag(
        ("-f", "--filter"),
        "filter",
        metavar="EXPR",
        help="metadata filter, e.g. 'kind = \"faq\" AND year >= 2020' (fields are metadata keys)",
        value=_filter_value,
    ),
    _flag(("-k", "--top-k"), "top_k", type=positive_int, metavar="N", help="results (default 5)"),
    _flag(
        "--hybrid",
        "hybrid",
        type=alpha,
        nargs="?",
        const=AUTO_ALPHA,
        metavar="ALPHA",
        help="hybrid search, BM25 beside the vectors (on by default): 0 full-text only, 1 vector "
        "only; bare or 'auto': 0.2 for queries up to 40 words, 0.5 above",
        key="alpha",
        value=lambda value: None if value == AUTO_ALPHA else value,  # bare: alpha by the query's length
    ),
    _flag(
        "--no-hybrid",
        "hybrid",
        action="store_const",
        const=False,
        help="vector search only (no full-text leg)",
        dest="hybrid",
    ),
    _flag(
        "--fusion",
        "hybrid",
        choices=["zscore", "linear", "rrf"],
        help="how hybrid search fuses its two legs (default zscore: exact-term hits stay first)",
        key="fusion",
    ),
    _flag(
        "--no-collapse",
        "collapse_duplicates",
        action="store_const",
        const=False,
        help="keep every copy of a text (by default an .md page and its .html rendering are one "
        "result, the other copy listed under it)",
        dest="collapse",
    ),
    _flag(
        "--diversify",
        "diversify",
        type=unit_float,
        nargs="?",
        const=0.5,
        metavar="LAMBDA",
        help="re-pick results by MMR for less repetition: 1 keeps the order, lower is more diverse "
        "(default 0.5 when given bare)",
    ),
    _flag(
        "--min-score",
        "min_score",
        type=unit_float,
        metavar="S",
        help="drop results whose vector similarity is below S (0-1; under hybrid search too, the "
        "dense similarity)",
    ),
    _flag(
        "--rerank",
        "rerank",
        action="store_const",
        const=True,
        help="over-fetch and rerank with the offline scorer (MiniLM if installed, else the "
        "collection's encoder; weights 0.4/0.4/0.2)",
    ),
    _flag("--nprobes", "nprobes", type=positive_int, metavar="N", help="IVF index: partitions to probe"),
    _flag(
        "--refine-factor",
        "refine_factor",
        type=positive_int,
        metavar="N",
        help="IVF_PQ index: re-rank N x top_k candidates exactly",
    ),
    _flag("--ef", "ef", type=positive_int, metavar="N", help="HNSW index: candidate list size"),
)


def add_query_flags(parser: argparse.ArgumentParser) -> None:
    """Add `QUERY_FLAGS` to ``parser``; ``--hybrid`` and ``--no-hybrid`` exclude each other."""
    switches = parser.add_mutually_exclusive_group()
    for flag in QUERY_FLAGS:
        target = switches if flag.name == "hybrid" else parser
        target.add_argument(*flag.flags, dest=flag.name, default=None, **flag.argparse)


def query_settings(args: argparse.Namespace) -> RetrievalSettings:
    """The settings ``turnkit query`` runs with: the defaults, with each flag given on top.

    Raises:
        CliUsageError: ``--fusion`` with ``--no-hybrid``.
        InvalidFilterError: the ``--filter`` expression does not parse.
        InvalidRankingConfigError: a value the settings refuse.
    """
    from ..batteries.vector import RetrievalSettings

    overrides: dict[str, Any] = {}
    seen: set[str] = set()
    for flag in QUERY_FLAGS:
        raw = getattr(args, flag.name, None)
        if raw is None or flag.name in seen:
            continue
        seen.add(flag.name)
        value = flag.value(raw) if flag.value is not None else raw
        if flag.key is None or isinstance(raw, bool):
            overrides[flag.field] = value
            continue
        part = overrides.setdefault(flag.field, {})
        if not isinstance(part, dict):
            raise CliUsageError(
                f"--{flag.key} needs hybrid search, and --no-hybrid turns it off.",
                hint=f"Leave out --no-hybrid or --{flag.key}.",
                field=flag.field,
            )
        part[flag.key] = value
    return RetrievalSettings().merge(overrides)


def settings_json(settings: RetrievalSettings, *, filter_text: str | None = None) -> dict[str, Any]:
    """``settings`` as JSON data: every field that is data, and the filter as the expression given."""
    # Not data: a model, a scorer, a filter node (the expression given is shown instead).
    data = settings.model_dump(mode="json", exclude={"rerank_model", "rerank_scorer", "filter"})
    if isinstance(data.get("hybrid"), dict):
        data["hybrid"].pop("text", None)  # set per query from its words, never by settings
    data["filter"] = filter_text
    return data
