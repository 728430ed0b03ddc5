"""Request and response models of the Vertex-shaped ``retrieve_contexts``.

Field names are Vertex's, in snake_case; the camelCase JSON spelling
(``ragRetrievalConfig``, ``topK``…) is accepted too. Unknown fields are errors,
so a misspelt option is reported instead of silently ignored.

Responses keep snake_case attributes in Python; ``model_dump(by_alias=True)``
gives the REST spelling of Vertex's JSON (``sourceUri``, ``sourceDisplayName``,
``pageSpan``, ``firstPage``…), which is what the MCP server answers with.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from ..batteries.vector import PageSpan
from ._results import CollapsedCopy


class _Request(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True, strict=False
    )


class RankService(_Request):
    """Rank Service ranking: reranks with a local relevance scorer.

    The scorer is ``scorers[model_name]`` when the host named scorers, else
    turnkit's offline scorer (see `retrieve_contexts`).
    """

    model_name: str | None = None


class LlmRanker(_Request):
    """LLM ranking: reranks with the host's chat model of that name as a batched judge."""

    model_name: str | None = None


class Ranking(_Request):
    """Ranking config: at most one of ``rank_service`` and ``llm_ranker``."""

    rank_service: RankService | None = None
    llm_ranker: LlmRanker | None = None

    @model_validator(mode="after")
    def _one_ranker(self) -> Ranking:
        if self.rank_service is not None and self.llm_ranker is not None:
            raise ValueError("only one of rank_service and llm_ranker can be set")
        return self


class RagFilter(_Request):
    """Filters: a metadata expression and at most one vector threshold.

    Attributes:
        metadata_filter: A text expression such as ``kind = "faq" AND year >= 2020``
            over metadata keys, parsed by turnkit's grammar (never passed as SQL).
        vector_distance_threshold: Keep contexts whose raw distance is smaller.
        vector_similarity_threshold: Keep contexts whose similarity (turnkit's
            score in [0, 1]) is larger. Under ``hybrid_search`` it reads the
            dense similarity (the score in a plain vector search), never the
            fused score, which only ranks.
    """

    metadata_filter: str | None = None
    vector_distance_threshold: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    vector_similarity_threshold: float | None = Field(default=None, ge=0, le=1)

    @model_validator(mode="after")
    def _one_threshold(self) -> RagFilter:
        # `is not None`, not truthiness: a threshold of 0.0 is a value (the Vertex SDK drops it).
        if self.vector_distance_threshold is not None and self.vector_similarity_threshold is not None:
            raise ValueError(
                "only one of vector_distance_threshold and vector_similarity_threshold can be set"
            )
        return self


class HybridSearch(_Request):
    """Hybrid (full-text plus vector) search.

    Attributes:
        alpha: Weight of the vector search in [0, 1]; 0 is full-text (BM25)
            only, 1 is vector only. Default 0.5, as in Vertex.
    """

    alpha: float | None = Field(default=None, ge=0, le=1)


class RagRetrievalConfig(_Request):
    """How many contexts, which filters, which ranking, and hybrid search."""

    top_k: int | None = Field(default=None, ge=1)
    filter: RagFilter | None = None
    ranking: Ranking | None = None
    hybrid_search: HybridSearch | None = None


class RagQuery(_Request):
    """The query: text plus retrieval config."""

    text: str = Field(min_length=1)
    rag_retrieval_config: RagRetrievalConfig | None = None

    @field_validator("text")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("query text must not be blank")
        return value


class RagResource(_Request):
    """One corpus (a collection), optionally narrowed to some of its files.

    Attributes:
        rag_corpus: A collection name, or a Vertex resource name whose last
            segment is the collection (``projects/p/locations/l/ragCorpora/docs``).
        rag_file_ids: Keep chunks of these files only; an id matches a chunk's
            ``metadata.source_uri`` or ``metadata.source_display_name``.
    """

    rag_corpus: str | None = None
    rag_file_ids: list[str] | None = Field(default=None, max_length=1000)


class VertexRagStore(_Request):
    """The data source: one corpus, or files of one corpus."""

    rag_resources: list[RagResource] = Field(default_factory=list, max_length=1)
    vector_distance_threshold: float | None = Field(
        default=None,
        ge=0,
        allow_inf_nan=False,
        description="Deprecated in Vertex; use the query filter's threshold.",
    )


class RetrieveContextsRequest(_Request):
    """A Vertex ``RetrieveContextsRequest``.

    Attributes:
        parent: ``projects/{project}/locations/{location}``; accepted and ignored.
        query: The query.
        vertex_rag_store: Which corpus (collection) and files to search.
    """

    parent: str | None = None
    query: RagQuery
    vertex_rag_store: VertexRagStore | None = None


class _Response(BaseModel):
    # Aliases are the REST JSON names; both spellings validate.
    model_config = ConfigDict(
        frozen=True, alias_generator=to_camel, validate_by_name=True, validate_by_alias=True
    )


class RagChunk(_Response):
    """The retrieved chunk."""

    text: str
    page_span: PageSpan | None = None


class RagContext(_Response):
    """One retrieved context.

    Attributes:
        source_uri: The source file's URI (``metadata.source_uri``).
        source_display_name: The file's display name.
        text: The chunk text.
        score: The raw distance (default; lower is closer, cosine in [0, 2]) or
            turnkit's similarity in [0, 1] (higher is closer), as configured.
        chunk: The chunk, with its page span when it came from paged input.
        duplicates: turnkit's addition: other records with the same text
            (another file's copy), collapsed into this context; absent when none.
    """

    source_uri: str | None = None
    source_display_name: str | None = None
    text: str
    score: float | None = None
    chunk: RagChunk
    duplicates: list[CollapsedCopy] | None = None


class RagContexts(_Response):
    """The list of contexts."""

    contexts: list[RagContext] = []


class RetrieveContextsResponse(_Response):
    """A Vertex ``RetrieveContextsResponse``; an empty list means nothing matched."""

    contexts: RagContexts = RagContexts()
