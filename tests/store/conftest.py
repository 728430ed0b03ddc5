import itertools

import pytest

from turnkit.batteries.vector import HashEncoder, create_vector_store

from ._data import DOCS

_counter = itertools.count()


@pytest.fixture
def vs(tmp_path):
    # A temp dir per test: memory:// tables vanish with their last handle and
    # a real directory exercises the embedded default.
    return create_vector_store(uri=str(tmp_path / "db"), encoder=HashEncoder(256), auto_optimize=None)


@pytest.fixture
def mem_vs():
    return create_vector_store(uri="memory://", encoder=HashEncoder(256), auto_optimize=None)


@pytest.fixture
def collection() -> str:
    return f"c{next(_counter)}"


@pytest.fixture
def docs() -> list[dict]:
    return [dict(d) for d in DOCS]
