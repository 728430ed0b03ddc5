import itertools

import pytest

from turnkit.batteries.vector import HashEncoder, create_vector_store

_counter = itertools.count()

# Two tenants share one collection; the words overlap on purpose so a search
# for one tenant's text also ranks the other tenant's rows highly.
KB = [
    {
        "id": "acme-refund",
        "document": "Refunds are paid within 5 business days.",
        "metadata": {
            "tenant": "acme",
            "kind": "faq",
            "year": 2023,
            "source_uri": "file:///kb/acme/policy.pdf",
            "source_display_name": "policy.pdf",
            "page_span": {"first_page": 3, "last_page": 4},
        },
    },
    {
        "id": "acme-ship",
        "document": "Orders ship from Lyon within 2 days.",
        "metadata": {"tenant": "acme", "kind": "howto", "year": 2021},
    },
    {
        "id": "globex-refund",
        "document": "Refunds are paid within 30 business days, globex secret.",
        "metadata": {"tenant": "globex", "kind": "faq", "year": 2024},
    },
    {
        "id": "globex-ship",
        "document": "Orders ship from Oslo within 9 days.",
        "metadata": {"tenant": "globex", "kind": "howto", "year": 2019},
    },
]


@pytest.fixture
def store():
    return create_vector_store(uri="memory://", encoder=HashEncoder(128), auto_optimize=None)


@pytest.fixture
def collection() -> str:
    return f"kb{next(_counter)}"


@pytest.fixture
def kb(store, collection):
    store(collection).upsert_sync([dict(r) for r in KB])
    return store, collection
