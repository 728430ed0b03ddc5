"""Distributed ingest on Ray: workers load, chunk, encode and write Lance fragments; the driver commits once.

Each Ray actor opens the store itself and skips files whose stored chunks are
current (the same fingerprints as the single-process ingest). Chunk ids are
deterministic, so a rerun writes nothing, and a run killed before the driver's
commit leaves the collection as it was.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from turnkit._checks import is_int

from .._aio import run_sync
from .._lazy import import_optional
from ._errors import IngestUsageError
from ._ignore import FileFilter
from ._pipeline import Outcome, _process, _Settings, make_report
from ._report import IngestReport
from ._store_io import INGEST_FIELDS, Row, Writer, declare_ingest_fields, lookup
from ._store_io import prune as prune_missing
from ._walk import Candidate, Found

if TYPE_CHECKING:
    from ..batteries.vector import Encoder, VectorStore

__all__ = ["RayEngine"]

_DELETE_FILES = 100  # source URIs per delete of replaced rows


class _Worker:
    """One Ray actor: a store of its own, its encoder loaded once, files in, fragments out."""

    def __init__(
        self,
        uri: str,
        storage_options: dict[str, str],
        collection: str,
        encoder_factory: Callable[[], Encoder],
        metric: str,
    ) -> None:
        from ..batteries.vector import create_vector_store

        self.collection = collection
        self.store = create_vector_store(
            uri,
            encoder=encoder_factory(),
            storage_options=storage_options or None,
            metric=metric,
            auto_optimize=None,
        )

    def run(
        self, job: list[tuple[Candidate, list[Row]]], settings: _Settings
    ) -> tuple[list[Outcome], list[str]]:
        """Each file's outcome, its chunks written as fragments: they travel back as their fingerprint."""
        from ..batteries.vector.store._fragments import write_fragments_sync

        outcomes: list[Outcome] = []
        records: list[dict[str, Any]] = []
        redo: list[str] = []
        for candidate, stored in job:
            outcome = _process(candidate, stored, settings)
            if outcome.chunks:
                # Rows of an earlier write of these very chunks that did not finish: the same ids and
                # fingerprint as the new ones, so they go now, before the driver's commit adds them.
                outcome.keep_fingerprint = current = outcome.chunks[0].fingerprint
                redo.extend(r.id for r in stored if r.fingerprint == current)
                records.extend(chunk.to_record() for chunk in outcome.chunks)
                outcome.chunks = []
            outcomes.append(outcome)
        if redo:
            self.store(self.collection).where_in("id", redo).delete_sync()
        fragments = write_fragments_sync(self.store, self.collection, records) if records else []
        return outcomes, fragments


def _default_factory(store: VectorStore, dimension: int) -> Callable[[], Encoder]:
    from ..batteries.vector import encoder_from_spec
    from ..batteries.vector.encoders._registry import encoder_for_recorded

    encoder = store.encoder
    spec = encoder_for_recorded(encoder.name, dimension) if encoder is not None else None
    if spec is None:
        raise IngestUsageError(
            f"The ray engine cannot rebuild the encoder {getattr(encoder, 'name', None)!r} in its workers.",
            code="E_INGEST_INVALID_OPTION",
            hint="Pass encoder_factory=, a picklable function that returns the encoder.",
        )
    return lambda: encoder_from_spec(spec, dimension=dimension)


@dataclass(frozen=True, slots=True, kw_only=True)
class RayEngine:
    """Run an ingest on Ray: ``ingest(paths, store=..., collection=..., engine=RayEngine())``.

    Workers load, chunk, encode and write Lance fragments; the driver commits
    them once and removes the rows they replace (see docs/ingesting.md).
    Files are read where the workers run, so on a cluster the paths must be
    visible to every node (a shared file system), and the store's URI must be
    object storage or a shared disk. Ray is started on this machine when it is
    not running and no ``address`` is given (and stopped afterwards).

    Attributes:
        address: A Ray cluster to join (``"auto"``, ``"ray://host:10001"``);
            default: the ``RAY_ADDRESS`` variable, or else Ray started here.
        workers: Ray actors, one CPU each, each loading the encoder once;
            default: the CPUs Ray has, at most 8.
        files_per_task: Files a worker takes at a time.
        encoder_factory: Builds the encoder in each worker (picklable); by
            default the store's encoder is rebuilt from its name (every built-in encoder).
    """

    address: str | None = None
    workers: int | None = None
    files_per_task: int = 16
    encoder_factory: Callable[[], Encoder] | None = None

    def __post_init__(self) -> None:
        for name in ("workers", "files_per_task"):
            value = getattr(self, name)
            if value is not None and not is_int(value, 1):
                raise IngestUsageError(
                    f"RayEngine {name} must be a positive int; got {value!r}.", code="E_INGEST_INVALID_OPTION"
                )

    def run(
        self,
        store: VectorStore,
        collection: str,
        found: Found,
        settings: _Settings,
        files: FileFilter,
        prune: bool,
        started: float,
    ) -> IngestReport:
        """`ingest`'s run on Ray, once its options are checked and its files found (in a thread).

        `ingest` calls it for an engine other than ``"local"``; it never imports this module itself.

        Raises:
            IngestUsageError: ``E_INGEST_DEPENDENCY_MISSING``: Ray or pylance is not installed.
        """
        ray = import_optional(
            "ray",
            partial(IngestUsageError, code="E_INGEST_DEPENDENCY_MISSING"),
            "The ray engine needs Ray and pylance",
            "Install them: pip install 'turnkit[ray]'.",
        )
        if importlib.util.find_spec("lance") is None:
            raise IngestUsageError(
                "The ray engine needs pylance to write fragments.",
                code="E_INGEST_DEPENDENCY_MISSING",
                hint="Install it: pip install 'turnkit[ray]'.",
            )
        existed = store.has_collection_sync(collection)
        run_sync(declare_ingest_fields(store, collection, existed))
        info = store.create_collection_sync(collection, exist_ok=True, fields=INGEST_FIELDS)
        try:
            factory = self.encoder_factory or _default_factory(store, info.dimension)
            with warnings.catch_warnings():
                # Ray forks its processes from a driver that has loaded LanceDB, which warns about forking;
                # the workers open stores of their own, so nothing of the driver's runtime is used there.
                warnings.filterwarnings("ignore", message=r".*fork", category=RuntimeWarning)
                warnings.filterwarnings("ignore", message=r"lance is not fork-safe", category=UserWarning)
                results, fragments = self._run_workers(ray, store, collection, found, settings, factory)
        except BaseException:
            if not existed and store(collection).count_sync() == 0:  # a failed first run leaves nothing
                store.drop_collection_sync(collection, missing_ok=True)
            raise
        written, deleted = _commit(store, collection, results, fragments)
        q = store(collection)
        pruned = run_sync(prune_missing(q, found, Writer(q, 1, None))) if prune else (0, 0)
        for result in results:
            found.record(result.status, result.issue)
        return make_report(
            collection, found, (written, deleted), pruned, started, settings, files, prune=prune, engine="ray"
        )

    def _run_workers(
        self,
        ray: Any,
        store: VectorStore,
        collection: str,
        found: Found,
        settings: _Settings,
        factory: Callable[[], Encoder],
    ) -> tuple[list[Outcome], list[str]]:
        """Look up the stored rows, start Ray if it is not running, run the files through an actor pool."""
        stored = run_sync(lookup(store(collection), [c.uri for c in found.candidates]))
        started_ray = not ray.is_initialized()
        if started_ray:
            # Ray's own default (address None) also joins a cluster that `ray start` left running here,
            # and then refuses num_cpus; "local" starts Ray here, as documented, unless an address is given.
            address = self.address or os.environ.get("RAY_ADDRESS") or "local"
            ray.init(
                address=address,
                num_cpus=(self.workers or os.cpu_count() or 1) if address == "local" else None,
                include_dashboard=False,
                log_to_driver=False,
                configure_logging=False,
            )
        try:
            n = self.workers or max(1, min(8, int(ray.available_resources().get("CPU", 1))))
            actor = ray.remote(num_cpus=1)(_Worker)
            pool = ray.util.ActorPool(
                [
                    actor.remote(store.uri, store.storage_options, collection, factory, store.metric)
                    for _ in range(min(n, max(1, len(found.candidates))))
                ]
            )
            jobs = [
                [(c, stored.get(c.uri, [])) for c in found.candidates[i : i + self.files_per_task]]
                for i in range(0, len(found.candidates), self.files_per_task)
            ]
            done = list(pool.map_unordered(lambda a, job: a.run.remote(job, settings), jobs))
            return [o for outcomes, _ in done for o in outcomes], [f for _, made in done for f in made]
        finally:
            if started_ray:
                ray.shutdown()


def _commit(
    store: VectorStore, collection: str, results: list[Outcome], fragments: list[str]
) -> tuple[int, int]:
    """The driver's one commit of the workers' fragments, then the rows it replaced: (written, deleted)."""
    from ..batteries.vector.store._fragments import commit_fragments_sync

    q = store(collection)
    written = commit_fragments_sync(store, collection, fragments)
    deleted = 0
    # Rows the commit replaced: a written file's rows under another fingerprint (some may share an
    # id with a new row, so they go by fingerprint, never by id), and a file now empty of text.
    replaced = [
        (r.candidate.uri, r.keep_fingerprint)
        for r in results
        if r.keep_fingerprint and (r.status == "write" or r.stale_ids)
    ]
    for start in range(0, len(replaced), _DELETE_FILES):
        group = replaced[start : start + _DELETE_FILES]
        old = q.where_in("metadata.source_uri", [u for u, _ in group]).where_not_in(
            "metadata.ingest_fingerprint", [f for _, f in group]
        )
        deleted += old.delete_sync()
    gone = [i for r in results if r.status == "empty" for i in r.stale_ids]
    if gone:
        deleted += q.where_in("id", gone).delete_sync()
    return written, deleted
