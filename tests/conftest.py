import os

import pytest

# LanceDB logs a warning per query for some projections; keep test output readable.
os.environ.setdefault("LANCEDB_LOG", "error")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
