"""Real LanceDB stores for the ranking tests."""

from __future__ import annotations

import itertools

import pytest

from turnkit.batteries.vector import HashEncoder, VectorStore, create_vector_store

_counter = itertools.count()


@pytest.fixture
def vs(tmp_path) -> VectorStore:
    return create_vector_store(uri=str(tmp_path / "db"), encoder=HashEncoder(256), auto_optimize=None)


@pytest.fixture
def collection() -> str:
    return f"rank{next(_counter)}"
