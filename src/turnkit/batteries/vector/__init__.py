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
    CollectionCorruptError,
    CollectionExistsError,
    CollectionNotFoundError,
    ConnectionFailedError,
    DeleteFailedError,
    DimensionMismatchError,
    DriverUnavailableError,
    EncoderFailedError,
    EncoderMismatchError,
    EncoderRequiredError,
    FilterKeyNotFoundError,
    InvalidCollectionNameError,
    InvalidFilterError,
    InvalidQueryError,
    InvalidRankingConfigError,
    InvalidVectorRecordError,
    InvalidVectorStoreConfigError,
    ProjectionRequiredError,
    QueryConflictError,
    RawBindingMismatchError,
    RecordNotFoundError,
    RerankFailedError,
    SearchFailedError,
    StoreOperationFailedError,
    UnknownFieldError,
    UnsafeDeleteError,
    UnsupportedFilterOperatorError,
    UpsertFailedError,
    VectorStoreRuntimeError,
    VectorStoreUsageError,
)

if typing.TYPE_CHECKING:
    from turnkit.batteries.vector._callbacks import (
        GLUE_METADATA_KEYS,
        InvalidRetrievableGlueConfigError,
        ReservedMetadataKeyError,
        RetrievableCallbacks,
        RetrievableSkippedWarning,
        VectorRetrievableCallbacks,
        VectorRetrievableGlue,
        create_vector_retrievable_callbacks,
    )
    from turnkit.batteries.vector._history import (
        RecallScope,
        TenantRule,
        VectorMessageStore,
        create_vector_message_store,
    )
    from turnkit.batteries.vector._matches import VectorMatch, VectorRecord
    from turnkit.batteries.vector._retrieve import Retrieval, retrieve, retrieve_sync
    from turnkit.batteries.vector._settings import RetrievalSettings, SettingsInput
    from turnkit.batteries.vector._sources import source_of
    from turnkit.batteries.vector.encoders._base import (
        EncodeKind,
        Encoder,
        FunctionEncoder,
        HashEncoder,
        WordLlamaEncoder,
        encode_texts,
    )
    from turnkit.batteries.vector.encoders._minilm import MiniLMEncoder
    from turnkit.batteries.vector.encoders._openai import OpenAIEmbeddingEncoder
    from turnkit.batteries.vector.encoders._registry import (
        ENCODER_SPECS,
        OFFLINE_ENCODERS,
        build_recorded_encoder,
        encoder_for_recorded,
        encoder_from_spec,
    )
    from turnkit.batteries.vector.encoders._sentence_transformers import SentenceTransformerEncoder
    from turnkit.batteries.vector.filters._ast import And, Condition, FilterNode, Not, Or, Raw
    from turnkit.batteries.vector.filters._core import (
        MAX_IN_VALUES,
        MONGO_OPERATORS,
        and_,
        condition,
        evaluate,
        filter_to_dict,
        not_,
        or_,
        parse_mongo,
        to_sql,
        validate_field,
    )
    from turnkit.batteries.vector.filters._declared import FieldType
    from turnkit.batteries.vector.filters._format import format_filter_expression
    from turnkit.batteries.vector.filters._keys import close_keys, required_keys
    from turnkit.batteries.vector.filters._text import parse_filter_expression
    from turnkit.batteries.vector.filters._where import FilterGroup
    from turnkit.batteries.vector.query._builder import DEFAULT_SELECT, QueryBuilder
    from turnkit.batteries.vector.query._spec import NearId, NearText, NearVector, QuerySpec
    from turnkit.batteries.vector.ranking._abstain import (
        GROUNDING_STASH_KEY,
        NO_GROUNDED_ANSWER,
        abstaining_fetch_stage,
        with_min_score,
    )
    from turnkit.batteries.vector.ranking._collapse import NEAR_COPY, collapse_duplicates
    from turnkit.batteries.vector.ranking._mmr import MmrSpec, diversify, mmr_select
    from turnkit.batteries.vector.ranking._rerank import (
        DEFAULT_RERANK_WEIGHTS,
        EncoderScorer,
        LLMJudge,
        RelevanceScorer,
        RerankedMatch,
        RerankOptions,
        RerankWeights,
        local_scorer,
        parse_judge_scores,
        rerank,
        rerank_search,
        rerank_sync,
    )
    from turnkit.batteries.vector.store._create import create_vector_store
    from turnkit.batteries.vector.store._fragments import (
        commit_fragments,
        commit_fragments_sync,
        write_fragments,
        write_fragments_sync,
    )
    from turnkit.batteries.vector.store._hybrid import (
        HybridOption,
        HybridSpec,
        linear_fuse,
        rrf_fuse,
        zscore_fuse,
    )
    from turnkit.batteries.vector.store._memory_index import CachedCollection, MemoryCache, MemoryCacheStats
    from turnkit.batteries.vector.store._scores import Metric, score_from_distance
    from turnkit.batteries.vector.store._store import (
        AutoOptimize,
        CollectionInfo,
        UpsertResult,
        VectorStore,
    )

# Imported on first use (see turnkit._lazy): the TYPE_CHECKING block above is the list.
if not typing.TYPE_CHECKING:  # type checkers read the imports above instead
    __getattr__, __dir__ = _lazy_exports(__name__)

__all__ = [
    "And",
    "AutoOptimize",
    "CachedCollection",
    "CollectionCorruptError",
    "CollectionExistsError",
    "CollectionInfo",
    "CollectionNotFoundError",
    "Condition",
    "ConnectionFailedError",
    "DEFAULT_RERANK_WEIGHTS",
    "DEFAULT_SELECT",
    "DeleteFailedError",
    "DimensionMismatchError",
    "DriverUnavailableError",
    "ENCODER_SPECS",
    "EncodeKind",
    "Encoder",
    "EncoderFailedError",
    "EncoderMismatchError",
    "EncoderRequiredError",
    "EncoderScorer",
    "FieldType",
    "FilterGroup",
    "FilterKeyNotFoundError",
    "FilterNode",
    "FunctionEncoder",
    "GLUE_METADATA_KEYS",
    "GROUNDING_STASH_KEY",
    "HashEncoder",
    "HybridOption",
    "HybridSpec",
    "InvalidCollectionNameError",
    "InvalidFilterError",
    "InvalidQueryError",
    "InvalidRankingConfigError",
    "InvalidRetrievableGlueConfigError",
    "InvalidVectorRecordError",
    "InvalidVectorStoreConfigError",
    "LLMJudge",
    "MAX_IN_VALUES",
    "MONGO_OPERATORS",
    "MemoryCache",
    "MemoryCacheStats",
    "Metric",
    "MiniLMEncoder",
    "MmrSpec",
    "NEAR_COPY",
    "NO_GROUNDED_ANSWER",
    "NearId",
    "NearText",
    "NearVector",
    "Not",
    "OFFLINE_ENCODERS",
    "OpenAIEmbeddingEncoder",
    "Or",
    "ProjectionRequiredError",
    "QueryBuilder",
    "QueryConflictError",
    "QuerySpec",
    "Raw",
    "RawBindingMismatchError",
    "RecallScope",
    "RecordNotFoundError",
    "RelevanceScorer",
    "RerankFailedError",
    "RerankOptions",
    "RerankWeights",
    "RerankedMatch",
    "ReservedMetadataKeyError",
    "RetrievableCallbacks",
    "RetrievableSkippedWarning",
    "Retrieval",
    "RetrievalSettings",
    "SearchFailedError",
    "SentenceTransformerEncoder",
    "SettingsInput",
    "StoreOperationFailedError",
    "TenantRule",
    "UnknownFieldError",
    "UnsafeDeleteError",
    "UnsupportedFilterOperatorError",
    "UpsertFailedError",
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
    "abstaining_fetch_stage",
    "and_",
    "build_recorded_encoder",
    "close_keys",
    "collapse_duplicates",
    "commit_fragments",
    "commit_fragments_sync",
    "condition",
    "create_vector_message_store",
    "create_vector_retrievable_callbacks",
    "create_vector_store",
    "diversify",
    "encode_texts",
    "encoder_for_recorded",
    "encoder_from_spec",
    "evaluate",
    "filter_to_dict",
    "format_filter_expression",
    "linear_fuse",
    "local_scorer",
    "mmr_select",
    "not_",
    "or_",
    "parse_filter_expression",
    "parse_judge_scores",
    "parse_mongo",
    "required_keys",
    "rerank",
    "rerank_search",
    "rerank_sync",
    "retrieve",
    "retrieve_sync",
    "rrf_fuse",
    "score_from_distance",
    "source_of",
    "to_sql",
    "validate_field",
    "with_min_score",
    "write_fragments",
    "write_fragments_sync",
    "zscore_fuse",
]
