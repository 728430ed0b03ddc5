"""Distributed ingest on Ray (``pip install 'turnkit[ray]'``): see `ingest_ray`.

```python
from turnkit.ingest.ray import ingest_ray

report = ingest_ray(["./handbook"], store=vs, collection="docs")  # Ray started on this machine
report = ingest_ray(["/shared/handbook"], store=vs, collection="docs", address="auto")  # a cluster
```
"""

from ._ray_engine import ingest_ray

__all__ = ["ingest_ray"]
