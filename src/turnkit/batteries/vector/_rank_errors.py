"""Errors of ranking: hybrid fusion, reranking, diversity and the extra encoders.

```
VectorStoreUsageError
└── InvalidRankingConfigError   E_VECTOR_RANKING_INVALID_CONFIG
VectorStoreRuntimeError
└── RerankFailedError           E_VECTOR_RERANK_FAILED
```
"""

from __future__ import annotations

from ._errors import VectorStoreRuntimeError, VectorStoreUsageError

__all__ = ["InvalidRankingConfigError", "RerankFailedError"]


class InvalidRankingConfigError(VectorStoreUsageError):
    """A ranking option (weights, top_k, pool size, alpha, scorer…) is unusable."""

    code = "E_VECTOR_RANKING_INVALID_CONFIG"
    default_hint = (
        "Give all three weights (semantic, vector, position) summing to 1, a top_k >= 1, and a "
        "scorer or model when the semantic weight is above 0; see docs/ranking.md."
    )


class RerankFailedError(VectorStoreRuntimeError):
    """The relevance scorer or judge model raised while reranking."""

    code = "E_VECTOR_RERANK_FAILED"
    default_hint = (
        "The scorer or model failed; the cause is chained to this error. Retry, or rerank with "
        "on_error='fallback' to keep the retrieval order when the scorer is down."
    )
