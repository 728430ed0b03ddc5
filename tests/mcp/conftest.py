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
