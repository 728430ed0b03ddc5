"""The vector battery: a LanceDB table as an agent's retrieval memory.

```python
from turnkit.batteries.vector import HashEncoder, create_vector_store

vs = create_vector_store(uri="memory://", encoder=HashEncoder())
vs("notes").upsert_sync([{"id": "n1", "document": "LanceDB stores vectors on disk"}])
print(vs("notes").near_text("vectors").select("id").limit(1).search_sync()[0].id)
#> n1
```
"""

from ._abstain import GROUNDING_STASH_KEY, NO_GROUNDED_ANSWER, abstaining_fetch_stage, with_min_score
from ._builder import QueryBuilder
from ._callbacks import (
    GLUE_METADATA_KEYS,
    InvalidRetrievableGlueConfigError,
    ReservedMetadataKeyError,
    RetrievableCallbacks,
    RetrievableSkippedWarning,
    VectorRetrievableCallbacks,
    VectorRetrievableGlue,
    create_vector_retrievable_callbacks,
)
from ._encoders import EncodeKind, Encoder, FunctionEncoder, HashEncoder, WordLlamaEncoder, encode_texts
from ._errors import (
    CollectionExistsError,
    CollectionNotFoundError,
    ConnectionFailedError,
    DeleteFailedError,
    DimensionMismatchError,
    DriverUnavailableError,
    EncoderFailedError,
    EncoderMismatchError,
    EncoderRequiredError,
    InvalidCollectionNameError,
    InvalidFilterError,
    InvalidQueryError,
    InvalidVectorRecordError,
    InvalidVectorStoreConfigError,
    ProjectionRequiredError,
    QueryConflictError,
    RawBindingMismatchError,
    RecordNotFoundError,
    SearchFailedError,
    StoreOperationFailedError,
    UnknownFieldError,
    UnsafeDeleteError,
    UnsupportedFilterOperatorError,
    UpsertFailedError,
    VectorStoreRuntimeError,
    VectorStoreUsageError,
)
from ._filter_ast import And, Condition, FilterNode, Not, Or, Raw
from ._filter_text import format_filter_expression, parse_filter_expression
from ._filters import (
    MAX_IN_VALUES,
    MISSING,
    and_,
    bind_raw,
    condition,
    evaluate,
    filter_to_dict,
    not_,
    or_,
    parse_mongo,
    sql_literal,
    to_sql,
    validate_field,
)
from ._hybrid import HybridSpec, linear_fuse, rrf_fuse
from ._minilm import MiniLMEncoder
from ._mmr import MmrSpec, diversify, mmr_select
from ._openai_embeddings import OpenAIEmbeddingEncoder
from ._rank_errors import InvalidRankingConfigError, RerankFailedError
from ._records import VectorMatch, VectorRecord
from ._rerank import (
    DEFAULT_RERANK_WEIGHTS,
    EncoderScorer,
    LLMJudge,
    RelevanceScorer,
    RerankedMatch,
    RerankOptions,
    RerankWeights,
    parse_judge_scores,
    rerank,
    rerank_search,
    rerank_sync,
)
from ._scores import Metric, score_from_distance
from ._spec import NearId, NearText, NearVector, QuerySpec
from ._st_encoder import SentenceTransformerEncoder
from ._store import AutoOptimize, CollectionInfo, UpsertResult, VectorStore, create_vector_store
from ._where import FilterGroup

__all__ = [
    "And",
    "AutoOptimize",
    "CollectionExistsError",
    "CollectionInfo",
    "CollectionNotFoundError",
    "Condition",
    "ConnectionFailedError",
    "DEFAULT_RERANK_WEIGHTS",
    "DeleteFailedError",
    "DimensionMismatchError",
    "DriverUnavailableError",
    "EncodeKind",
    "Encoder",
    "EncoderFailedError",
    "EncoderMismatchError",
    "EncoderRequiredError",
    "EncoderScorer",
    "FilterGroup",
    "FilterNode",
    "FunctionEncoder",
    "GLUE_METADATA_KEYS",
    "GROUNDING_STASH_KEY",
    "HashEncoder",
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
    "MISSING",
    "Metric",
    "MiniLMEncoder",
    "MmrSpec",
    "NO_GROUNDED_ANSWER",
    "NearId",
    "NearText",
    "NearVector",
    "Not",
    "OpenAIEmbeddingEncoder",
    "Or",
    "ProjectionRequiredError",
    "QueryBuilder",
    "QueryConflictError",
    "QuerySpec",
    "Raw",
    "RawBindingMismatchError",
    "RecordNotFoundError",
    "RelevanceScorer",
    "RerankFailedError",
    "RerankOptions",
    "RerankWeights",
    "RerankedMatch",
    "ReservedMetadataKeyError",
    "RetrievableCallbacks",
    "RetrievableSkippedWarning",
    "SearchFailedError",
    "SentenceTransformerEncoder",
    "StoreOperationFailedError",
    "UnknownFieldError",
    "UnsafeDeleteError",
    "UnsupportedFilterOperatorError",
    "UpsertFailedError",
    "UpsertResult",
    "VectorMatch",
    "VectorRecord",
    "VectorRetrievableCallbacks",
    "VectorRetrievableGlue",
    "VectorStore",
    "VectorStoreRuntimeError",
    "VectorStoreUsageError",
    "WordLlamaEncoder",
    "abstaining_fetch_stage",
    "and_",
    "bind_raw",
    "condition",
    "create_vector_retrievable_callbacks",
    "create_vector_store",
    "diversify",
    "encode_texts",
    "evaluate",
    "filter_to_dict",
    "format_filter_expression",
    "linear_fuse",
    "mmr_select",
    "not_",
    "or_",
    "parse_filter_expression",
    "parse_judge_scores",
    "parse_mongo",
    "rerank",
    "rerank_search",
    "rerank_sync",
    "rrf_fuse",
    "score_from_distance",
    "sql_literal",
    "to_sql",
    "validate_field",
    "with_min_score",
]
