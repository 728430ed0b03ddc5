import os
import socket
import subprocess
import time

import pytest

from turnkit.batteries.vector import HashEncoder, create_vector_store

ROWS = [
    {
        "id": "acme-refund",
        "document": "Refunds are paid within 5 business days.",
        "metadata": {
            "tenant": "acme",
            "kind": "faq",
            "year": 2023,
            "source_uri": "file:///kb/policy.pdf",
            "source_display_name": "policy.pdf",
            "page_span": {"first_page": 2, "last_page": 2},
        },
    },
    {
        "id": "acme-ship",
        "document": "Orders ship from Lyon within 2 days.",
        "metadata": {"tenant": "acme", "kind": "howto", "year": 2021},
    },
    {
        "id": "globex-refund",
        "document": "Refunds are paid within 30 business days.",
        "metadata": {"tenant": "globex", "kind": "faq", "year": 2024},
    },
]


@pytest.fixture
def disk_store(tmp_path):
    """A store on disk with two collections, as `turnkit serve` would find it."""
    uri = str(tmp_path / "db")
    vs = create_vector_store(uri=uri, encoder=HashEncoder(64), auto_optimize=None)
    vs("kb").upsert_sync([dict(r) for r in ROWS])
    vs("notes").upsert_sync(
        [{"id": "n1", "document": "Meeting notes about refunds", "metadata": {"kind": "note"}}]
    )
    return uri, vs


@pytest.fixture
def mem_store():
    vs = create_vector_store(uri="memory://", encoder=HashEncoder(64), auto_optimize=None)
    vs("kb").upsert_sync([dict(r) for r in ROWS])
    return vs


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_http(command, port, env=None):
    """Start a server command that listens on loopback ``port``; its process once it accepts connections."""
    proc = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env or {**os.environ, "LANCEDB_LOG": "error"},
    )
    deadline = time.monotonic() + 120  # a hang guard, not a timing claim: imports are slow under load
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                proc.wait(10)
                raise AssertionError(f"server did not start: {proc.stderr.read().decode()[-2000:]}") from None
            time.sleep(0.05)


def stop(proc):
    proc.terminate()
    proc.wait(10)
    proc.stderr.close()
