"""The vector battery: a LanceDB table as an agent's retrieval memory.

```python
from turnkit.batteries.vector import HashEncoder, create_vector_store

vs = create_vector_store(uri="memory://", encoder=HashEncoder())
vs("notes").upsert_sync([{"id": "n1", "document": "LanceDB stores vectors on disk"}])
print(vs("notes").near_text("vectors").select("id").limit(1).search_sync()[0].id)
#> n1
```
"""

import typing

from turnkit._lazy import lazy_exports as _lazy_exports
from turnkit.batteries.vector._errors import (
    CollectionNotFoundError,
    EncoderRequiredError,
    FilterKeyNotFoundError,
    InvalidFilterError,
    InvalidRankingConfigError,
    RecordNotFoundError,
    RetrievableSkippedWarning,
    UnknownFieldError,
    VectorStoreRuntimeError,
    VectorStoreUsageError,
)

if typing.TYPE_CHECKING:
    from turnkit.batteries.vector._callbacks import (
        VectorRetrievableCallbacks,
        VectorRetrievableGlue,
        create_vector_retrievable_callbacks,
    )
    from turnkit.batteries.vector._history import VectorMessageStore, create_vector_message_store
    from turnkit.batteries.vector._matches import VectorMatch, VectorRecord
    from turnkit.batteries.vector._retrieve import Retrieval, retrieve, retrieve_sync
    from turnkit.batteries.vector._settings import RetrievalSettings, SettingsInput
    from turnkit.batteries.vector._sources import PageSpan, source_of
    from turnkit.batteries.vector.encoders._base import (
        Encoder,
        FunctionEncoder,
        HashEncoder,
        WordLlamaEncoder,
        encode_texts,
    )
    from turnkit.batteries.vector.encoders._minilm import MiniLMEncoder
    from turnkit.batteries.vector.encoders._openai import OpenAIEmbeddingEncoder
    from turnkit.batteries.vector.encoders._registry import build_recorded_encoder, encoder_from_spec
    from turnkit.batteries.vector.encoders._sentence_transformers import SentenceTransformerEncoder
    from turnkit.batteries.vector.filters._ast import And, Condition, FilterNode, Not, Or, Raw
    from turnkit.batteries.vector.filters._core import (
        MAX_IN_VALUES,
        MONGO_OPERATORS,
        and_,
        condition,
        evaluate,
        not_,
        or_,
        parse_mongo,
        to_sql,
        validate_field,
    )
    from turnkit.batteries.vector.filters._format import format_filter_expression
    from turnkit.batteries.vector.filters._keys import close_keys, required_keys
    from turnkit.batteries.vector.filters._text import parse_filter_expression
    from turnkit.batteries.vector.query._builder import QueryBuilder
    from turnkit.batteries.vector.query._ranking_specs import HybridOption, HybridSpec
    from turnkit.batteries.vector.query._spec import QuerySpec
    from turnkit.batteries.vector.ranking._abstain import abstaining_fetch_stage, with_min_score
    from turnkit.batteries.vector.ranking._collapse import collapse_duplicates
    from turnkit.batteries.vector.ranking._fusion import LinearFusion, RRFFusion, ZScoreFusion
    from turnkit.batteries.vector.ranking._mmr import MmrSpec, diversify
    from turnkit.batteries.vector.ranking._rerank import (
        EncoderScorer,
        LLMJudge,
        RelevanceScorer,
        RerankedMatch,
        RerankOptions,
        RerankWeights,
        local_scorer,
        rerank,
        rerank_search,
        rerank_sync,
    )
    from turnkit.batteries.vector.store._create import create_vector_store
    from turnkit.batteries.vector.store._memory_index import MemoryCache
    from turnkit.batteries.vector.store._scores import Metric
    from turnkit.batteries.vector.store._store import AutoOptimize, CollectionInfo, UpsertResult, VectorStore

# Imported on first use (see turnkit._lazy): the TYPE_CHECKING block above is the list.
if not typing.TYPE_CHECKING:  # type checkers read the imports above instead
    __getattr__, __dir__ = _lazy_exports(__name__)

__all__ = [
    "And",
    "AutoOptimize",
    "CollectionInfo",
    "CollectionNotFoundError",
    "Condition",
    "Encoder",
    "EncoderRequiredError",
    "EncoderScorer",
    "FilterKeyNotFoundError",
    "FilterNode",
    "FunctionEncoder",
    "HashEncoder",
    "HybridOption",
    "HybridSpec",
    "InvalidFilterError",
    "InvalidRankingConfigError",
    "LLMJudge",
    "LinearFusion",
    "MAX_IN_VALUES",
    "MONGO_OPERATORS",
    "MemoryCache",
    "Metric",
    "MiniLMEncoder",
    "MmrSpec",
    "Not",
    "OpenAIEmbeddingEncoder",
    "Or",
    "PageSpan",
    "QueryBuilder",
    "QuerySpec",
    "RRFFusion",
    "Raw",
    "RecordNotFoundError",
    "RelevanceScorer",
    "RerankOptions",
    "RerankWeights",
    "RerankedMatch",
    "RetrievableSkippedWarning",
    "Retrieval",
    "RetrievalSettings",
    "SentenceTransformerEncoder",
    "SettingsInput",
    "UnknownFieldError",
    "UpsertResult",
    "VectorMatch",
    "VectorMessageStore",
    "VectorRecord",
    "VectorRetrievableCallbacks",
    "VectorRetrievableGlue",
    "VectorStore",
    "VectorStoreRuntimeError",
    "VectorStoreUsageError",
    "WordLlamaEncoder",
    "ZScoreFusion",
    "abstaining_fetch_stage",
    "and_",
    "build_recorded_encoder",
    "close_keys",
    "collapse_duplicates",
    "condition",
    "create_vector_message_store",
    "create_vector_retrievable_callbacks",
    "create_vector_store",
    "diversify",
    "encode_texts",
    "encoder_from_spec",
    "evaluate",
    "format_filter_expression",
    "local_scorer",
    "not_",
    "or_",
    "parse_filter_expression",
    "parse_mongo",
    "required_keys",
    "rerank",
    "rerank_search",
    "rerank_sync",
    "retrieve",
    "retrieve_sync",
    "source_of",
    "to_sql",
    "validate_field",
    "with_min_score",
]
