r"""Ingestion: load files, cut them into token-bounded chunks, upsert them into a vector store.

```python
import tempfile
from pathlib import Path

from turnkit.batteries.vector import HashEncoder, create_vector_store
from turnkit.ingest import ingest_sync

with tempfile.TemporaryDirectory() as tmp:
    Path(tmp, "guide.md").write_text("# Guide\n\n## Install\n\nRun pip install turnkit.\n")
    vs = create_vector_store(uri=f"{tmp}/db", encoder=HashEncoder())
    report = ingest_sync(tmp, store=vs, collection="docs", progress=False)
    print(report.files_written, report.chunks_written)
    #> 1 1
```

See the "Ingesting documents" docs page for the loaders, the metadata each
chunk carries, and the idempotency and crash-safety guarantees.
"""

from ._chunking import Chunk, chunk_document, split_text
from ._errors import DocumentLoadError, FileSkippedError, IngestUsageError
from ._loaders import load_document, source_uri_for
from ._model import LoadedDocument, Section
from ._pipeline import ingest, ingest_sync
from ._report import FileIssue, IngestProgress, IngestReport

__all__ = [
    "Chunk",
    "DocumentLoadError",
    "FileIssue",
    "FileSkippedError",
    "IngestProgress",
    "IngestReport",
    "IngestUsageError",
    "LoadedDocument",
    "Section",
    "chunk_document",
    "ingest",
    "ingest_sync",
    "load_document",
    "source_uri_for",
    "split_text",
]
