"""Untrusted trees: special files, outside symlinks, big files and loops never hang or blow memory."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from turnkit.batteries.vector import HashEncoder, create_vector_store
from turnkit.ingest import (
    FileSkippedError,
    ingest_sync,
    load_document,
)

pytestmark = pytest.mark.timeout(60)


def _run(tmp_path: Path, root: Path, **kw: object):  # type: ignore[no-untyped-def]
    vs = create_vector_store(uri=str(tmp_path / "db"), encoder=HashEncoder())
    return ingest_sync(root, store=vs, collection="c", progress=False, **kw)  # type: ignore[arg-type]


def _codes(report) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {Path(i.path).name: i.code for i in report.skipped}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "root"
    r.mkdir()
    (r / "ok.md").write_text("# Ok\n\nplain text\n")
    return r


def test_fifo_is_skipped_not_blocking(tmp_path: Path, root: Path) -> None:
    os.mkfifo(root / "pipe.md")
    report = _run(tmp_path, root)
    assert _codes(report)["pipe.md"] == "E_INGEST_SPECIAL_FILE"
    assert report.files_written == 1 and report.ok
    with pytest.raises(FileSkippedError) as exc_info:
        load_document(root / "pipe.md")
    assert exc_info.value.code == "E_INGEST_SPECIAL_FILE"


def test_socket_is_skipped(tmp_path: Path) -> None:
    root = Path("/tmp") / f"tk-sock-{os.getpid()}"  # AF_UNIX paths are short
    root.mkdir(exist_ok=True)
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(root / "s.md"))
        report = _run(tmp_path, root)
        assert _codes(report)["s.md"] == "E_INGEST_SPECIAL_FILE"
    finally:
        sock.close()
        (root / "s.md").unlink()
        root.rmdir()


def test_symlink_to_dev_zero(tmp_path: Path, root: Path) -> None:
    (root / "zero.txt").symlink_to("/dev/zero")
    assert _codes(_run(tmp_path, root))["zero.txt"] == "E_INGEST_EXTERNAL_SYMLINK"
    # Allowed to leave the root, it is still a device: skipped, never read.
    report = _run(tmp_path, root, follow_external_symlinks=True)
    assert _codes(report)["zero.txt"] == "E_INGEST_SPECIAL_FILE"


def test_symlink_outside_root(tmp_path: Path, root: Path) -> None:
    outside = tmp_path / "secret.md"
    outside.write_text("# Secret\n\nnot for the index\n")
    (root / "link.md").symlink_to(outside)
    (root / "inside.md").symlink_to(root / "ok.md")
    report = _run(tmp_path, root)
    assert _codes(report) == {"link.md": "E_INGEST_EXTERNAL_SYMLINK"}
    assert report.files_written == 1  # the inside link is the same source as ok.md
    allowed = _run(tmp_path, root, follow_external_symlinks=True)
    assert allowed.files_written == 1 and not allowed.skipped  # secret.md now written; ok.md unchanged
    assert allowed.files_unchanged == 1


def test_oversized_file(tmp_path: Path, root: Path) -> None:
    (root / "big.txt").write_text("x " * 5000)
    report = _run(tmp_path, root, max_file_size=1000)
    assert _codes(report)["big.txt"] == "E_INGEST_FILE_TOO_LARGE"
    assert "1,000-byte limit" in report.skipped[0].reason
    with pytest.raises(FileSkippedError) as exc_info:
        load_document(root / "big.txt", max_file_size=1000)
    assert exc_info.value.code == "E_INGEST_FILE_TOO_LARGE"
    assert _run(tmp_path, root, max_file_size=None).files_written == 1


def test_directory_symlink_loop_terminates(tmp_path: Path, root: Path) -> None:
    (root / "sub").mkdir()
    (root / "sub" / "loop").symlink_to(root)
    (root / "self.md").symlink_to(root / "self.md")
    report = _run(tmp_path, root)
    assert report.files_written == 1
    assert [i.code for i in report.errors] == ["E_INGEST_READ_FAILED"]  # the self-link names itself
