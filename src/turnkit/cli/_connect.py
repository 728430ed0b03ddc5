"""How the command line reaches a database: the URI plus object-store options and LanceDB Cloud keys.

Every command reaches its database through `connection_of`, so ``--storage-option`` and
``--api-key`` mean the same thing everywhere (``ingest``, ``query``, ``stats``, ``optimize``,
``collections``, ``serve``).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ._config import DEFAULT_COLLECTION, DEFAULT_URI, ENV_COLLECTION, ENV_URI, flag_or_env, resolve, store_uri
from ._errors import CliUsageError

if TYPE_CHECKING:
    from ..batteries.vector import Encoder, VectorStore

__all__ = ["ENV_API_KEY", "ENV_REGION", "Connection", "connection_of", "location_of", "parse_storage_options"]

ENV_API_KEY = "LANCEDB_API_KEY"
"""LanceDB Cloud's key, read for ``db://`` URIs when ``--api-key`` is not given."""
ENV_REGION = "LANCEDB_REGION"
"""LanceDB Cloud's region, read for ``db://`` URIs when ``--region`` is not given."""


def parse_storage_options(items: Sequence[str] | None) -> dict[str, str]:
    """``KEY=VALUE`` strings as a dict; keys are lower-cased, as LanceDB matches them case-insensitively.

    Raises:
        CliUsageError: an item has no ``=`` or an empty key.
    """
    options: dict[str, str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        key = key.strip().lower()
        if not sep or not key:
            raise CliUsageError(
                f"--storage-option {item!r} is not KEY=VALUE.",
                hint="Example: --storage-option endpoint=http://127.0.0.1:9000 "
                "--storage-option allow_http=true",
                field="storage_option",
            )
        options[key] = value
    return options


@dataclass(frozen=True)
class Connection:
    """A database location and the options needed to open it."""

    uri: str
    """As the user gave it (shown in messages)."""
    storage_options: Mapping[str, str] = field(default_factory=dict)
    api_key: str | None = None
    region: str | None = None

    @property
    def is_cloud(self) -> bool:
        """Whether the URI names a LanceDB Cloud database."""
        return self.uri.startswith("db://")

    def connect_options(self) -> dict[str, Any]:
        """Keyword arguments for `create_vector_store` beyond the URI."""
        options: dict[str, Any] = {}
        if self.storage_options:
            options["storage_options"] = dict(self.storage_options)
        if self.is_cloud:
            cloud = {"api_key": self.api_key, "region": self.region}
            options.update({key: value for key, value in cloud.items() if value})
        return options

    def check(self) -> None:
        """Refuse what cannot work before any connection is tried.

        Raises:
            CliUsageError: a ``db://`` URI without an API key.
        """
        if self.is_cloud and not self.api_key:
            raise CliUsageError(
                f"{self.uri!r} is a LanceDB Cloud database, which needs an API key.",
                hint=f"Pass --api-key KEY or set {ENV_API_KEY}.",
                field="api_key",
            )

    def store(self, *, encoder: Encoder | None = None, maintenance: bool = False) -> VectorStore:
        """A store over this database; ``maintenance`` keeps the store's background compaction on."""
        from ..batteries.vector import create_vector_store

        self.check()
        options = self.connect_options()
        if not maintenance:
            options["auto_optimize"] = None
        return create_vector_store(store_uri(self.uri), encoder=encoder, **options)


def connection_of(args: argparse.Namespace) -> Connection:
    """The connection the flags and environment describe."""
    uri = resolve(getattr(args, "uri", None), ENV_URI, DEFAULT_URI)
    return Connection(
        uri=uri,
        storage_options=parse_storage_options(getattr(args, "storage_option", None)),
        api_key=flag_or_env(getattr(args, "api_key", None), ENV_API_KEY),
        region=flag_or_env(getattr(args, "region", None), ENV_REGION),
    )


def location_of(args: argparse.Namespace) -> tuple[Connection, str]:
    """The connection and the collection (``--collection``, else the environment, else the default)."""
    return connection_of(args), resolve(getattr(args, "collection", None), ENV_COLLECTION, DEFAULT_COLLECTION)
