"""Distributed ingest on Ray (``pip install 'turnkit[ray]'``): pass a `RayEngine` to `turnkit.ingest.ingest`.

```python
from turnkit.ingest import ingest_sync
from turnkit.ingest.ray import RayEngine

report = ingest_sync(["./handbook"], store=vs, collection="docs", engine=RayEngine())  # Ray started here
report = ingest_sync(["/shared/handbook"], store=vs, collection="docs", engine=RayEngine(address="auto"))
```
"""

from ._ray_engine import RayEngine

__all__ = ["RayEngine"]
