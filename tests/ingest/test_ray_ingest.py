"""Distributed ingest on Ray, started on this machine: the single-process ingest's chunks, one commit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from turnkit.batteries.vector import HashEncoder, create_vector_store
from turnkit.ingest import ingest_sync

ray = pytest.importorskip("ray")
pytest.importorskip("lance")

from turnkit.ingest.ray import RayEngine  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    with warnings.catch_warnings():
        # Ray forks from a process that has loaded lance, which warns (an error under pytest's filters).
        warnings.simplefilter("ignore")
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


def _corpus(root: Path) -> Path:
    root.mkdir()
    for i in range(12):
        body = " ".join(f"Sentence {j} of file {i} about refunds and parcels." for j in range(120))
        (root / f"f{i:02d}.md").write_text(f"# File {i}\n\n{body}\n")
    (root / "notes.txt").write_text("A short note.")
    (root / "empty.md").write_text("")
    (root / "skip.bin").write_bytes(b"\x00\x01")
    return root


def _rows(vs) -> dict[str, tuple[str | None, dict]]:
    return {
        m.id: (m.document, m.metadata or {})
        for m in vs("kb").select("id", "document", "metadata").limit(10_000).search_sync()
    }


def test_same_chunks_as_single_process_then_idempotent(tmp_path: Path) -> None:
    root = _corpus(tmp_path / "docs")
    distributed = create_vector_store(str(tmp_path / "ray"), encoder=HashEncoder(32), auto_optimize=None)
    report = ingest_sync(
        root, store=distributed, collection="kb", engine=RayEngine(workers=2, files_per_task=3)
    )
    local = create_vector_store(str(tmp_path / "local"), encoder=HashEncoder(32), auto_optimize=None)
    baseline = ingest_sync(root, store=local, collection="kb", progress=False)
    assert report.ok and report.files_written == baseline.files_written == 13
    assert report.chunks_written == baseline.chunks_written
    assert {i.code for i in report.skipped} == {i.code for i in baseline.skipped}
    assert _rows(distributed) == _rows(local)  # ids, text and metadata, fingerprints included
    assert distributed("kb").count_sync() == baseline.chunks_written  # no duplicate rows
    again = ingest_sync(root, store=distributed, collection="kb", engine=RayEngine(workers=2))
    assert again.files_written == 0 and again.chunks_written == 0 and again.files_unchanged == 13
    # The single-process ingest agrees that nothing changed.
    assert ingest_sync(root, store=distributed, collection="kb", progress=False).chunks_written == 0


def test_changed_file_replaces_its_rows_and_prune_removes_gone_ones(tmp_path: Path) -> None:
    root = _corpus(tmp_path / "docs")
    vs = create_vector_store(str(tmp_path / "db"), encoder=HashEncoder(32), auto_optimize=None)
    ingest_sync(root, store=vs, collection="kb", engine=RayEngine(workers=2))
    before = _rows(vs)
    (root / "f03.md").write_text("# File 3\n\nEntirely new text about warranty claims.\n")
    (root / "f04.md").unlink()
    report = ingest_sync(root, store=vs, collection="kb", engine=RayEngine(workers=2), prune=True)
    assert report.files_written == 1 and report.files_pruned == 1
    after = _rows(vs)
    assert len(after) == vs("kb").count_sync()  # each id once
    sources = {meta["source_display_name"] for _, meta in after.values()}
    assert "f04.md" not in sources
    f03 = [doc for doc, meta in after.values() if meta["source_display_name"] == "f03.md"]
    assert f03 == ["# File 3\n\nEntirely new text about warranty claims."]
    untouched = {k: v for k, v in before.items() if v[1]["source_display_name"] not in ("f03.md", "f04.md")}
    assert all(after[k] == v for k, v in untouched.items())


def test_cli_engine_ray_and_missing_ray(tmp_path: Path) -> None:
    root = _corpus(tmp_path / "docs")
    argv = [
        sys.executable,
        "-m",
        "turnkit.cli",
        "ingest",
        str(root),
        "--uri",
        str(tmp_path / "db"),
        "-c",
        "kb",
    ]
    done = subprocess.run(
        [*argv, "--encoder", "hash:32", "--engine", "ray", "--json"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["files_written"] == 13 and report["settings"]["engine"] == "ray"
    # Without Ray installed (an import that fails for real in a fresh interpreter): a clear error.
    code = (
        "import sys; sys.modules['ray'] = None\n"
        "from turnkit.batteries.vector import HashEncoder, create_vector_store\n"
        "from turnkit.ingest import ingest_sync\nfrom turnkit.ingest.ray import RayEngine\n"
        f"vs = create_vector_store({str(tmp_path / 'db2')!r}, encoder=HashEncoder(8))\n"
        "try:\n    ingest_sync('.', store=vs, collection='kb', engine=RayEngine())\n"
        "except Exception as exc:\n    print(exc.code, exc.hint)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.startswith("E_INGEST_DEPENDENCY_MISSING") and "turnkit[ray]" in out.stdout


def test_cli_joins_the_cluster_ray_address_names(tmp_path: Path) -> None:
    """RAY_ADDRESS names a running cluster (this module's): the CLI joins it instead of starting Ray."""
    root = _corpus(tmp_path / "docs")
    env = {**os.environ, "RAY_ADDRESS": ray.get_runtime_context().gcs_address}
    done = subprocess.run(
        [sys.executable, "-m", "turnkit.cli", "ingest", str(root), "--uri", str(tmp_path / "db")]
        + ["-c", "kb", "--encoder", "hash:32", "--engine", "ray", "--json"],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["files_written"] == 13
    # The cluster is still this module's: joining it did not stop it.
    assert ray.is_initialized() and ray.cluster_resources().get("CPU") == 2


def test_ray_engine_against_object_storage(tmp_path: Path) -> None:
    """The workers write their fragments to an S3-compatible server; the driver commits once."""
    from tests._s3 import moto_available, s3_server

    if not moto_available():
        pytest.skip("moto[server] is not installed (pip install 'turnkit[s3-test]')")
    root = _corpus(tmp_path / "docs")
    with s3_server() as s3:
        vs = create_vector_store(
            s3.new_bucket(), encoder=HashEncoder(32), storage_options=s3.storage_options, auto_optimize=None
        )
        report = ingest_sync(root, store=vs, collection="kb", engine=RayEngine(workers=2))
        assert report.ok and report.files_written == 13
        assert vs("kb").count_sync() == report.chunks_written == len(_rows(vs))
        again = ingest_sync(root, store=vs, collection="kb", engine=RayEngine(workers=2))
        assert again.chunks_written == 0 and again.files_unchanged == 13
