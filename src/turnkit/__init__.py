"""turnkit: agent retrieval memory over a LanceDB vector index."""

import typing

from ._errors import (
    ERROR_CODES,
    CallbackNotConfiguredError,
    InvalidMessageError,
    InvalidModelConfigError,
    InvalidRetrievableError,
    InvalidTurnContextError,
    InvalidTurnRunnerConfigError,
    ModelError,
    PipelineError,
    RuntimeFailure,
    SyncInLoopThreadError,
    TokenBudgetExceededError,
    TokenizerUnavailableError,
    TrustTierRequiredError,
    TurnkitError,
    UnknownTrustTierError,
    UsageError,
)
from ._lazy import lazy_exports as _lazy_exports

if typing.TYPE_CHECKING:
    from ._context import (
        DeleteRetrievableCallback,
        FetchMessagesCallback,
        FetchRetrievablesCallback,
        MutateRetrievableCallback,
        StoreMessageCallback,
        StoreRetrievableCallback,
        TurnContext,
    )
    from ._messages import MESSAGE_ROLES, ChatMessage, InMemoryMessageStore, Message, MessageRole
    from ._models import ChatModel, OpenAIChatModel, ScriptedModel
    from ._prompt import (
        CONTEXT_PREAMBLE,
        SAFETY_DIRECTIVE,
        RenderedPrompt,
        TokenCounts,
        UntrustedPlacement,
        count_prompt_tokens,
        render_prompt,
    )
    from ._retrievable import (
        TRUST_TIERS,
        RawRetrievable,
        Retrievable,
        RetrievableSet,
        TrustTier,
        trust_rank,
        validate_trust_tier,
    )
    from ._runner import (
        DEFAULT_SYSTEM_PROMPT,
        GROUNDING_STASH_KEY,
        NO_GROUNDED_ANSWER,
        Middleware,
        Next,
        TurnEvent,
        TurnResult,
        TurnRunner,
        TurnRunnerConfig,
        fetch_retrievables_stage,
    )
    from ._tokens import count_tokens, get_encoding

__version__ = "0.1.0"

__all__ = [
    "CONTEXT_PREAMBLE",
    "CallbackNotConfiguredError",
    "ChatMessage",
    "ChatModel",
    "DEFAULT_SYSTEM_PROMPT",
    "DeleteRetrievableCallback",
    "ERROR_CODES",
    "FetchMessagesCallback",
    "FetchRetrievablesCallback",
    "GROUNDING_STASH_KEY",
    "InMemoryMessageStore",
    "InvalidMessageError",
    "InvalidModelConfigError",
    "InvalidRetrievableError",
    "InvalidTurnContextError",
    "InvalidTurnRunnerConfigError",
    "MESSAGE_ROLES",
    "Message",
    "MessageRole",
    "Middleware",
    "ModelError",
    "MutateRetrievableCallback",
    "NO_GROUNDED_ANSWER",
    "Next",
    "OpenAIChatModel",
    "PipelineError",
    "RawRetrievable",
    "RenderedPrompt",
    "Retrievable",
    "RetrievableSet",
    "RuntimeFailure",
    "SAFETY_DIRECTIVE",
    "ScriptedModel",
    "StoreMessageCallback",
    "StoreRetrievableCallback",
    "SyncInLoopThreadError",
    "TRUST_TIERS",
    "TokenBudgetExceededError",
    "TokenCounts",
    "TokenizerUnavailableError",
    "TrustTier",
    "TrustTierRequiredError",
    "TurnContext",
    "TurnEvent",
    "TurnResult",
    "TurnRunner",
    "TurnRunnerConfig",
    "TurnkitError",
    "UnknownTrustTierError",
    "UntrustedPlacement",
    "UsageError",
    "count_prompt_tokens",
    "count_tokens",
    "fetch_retrievables_stage",
    "get_encoding",
    "render_prompt",
    "trust_rank",
    "validate_trust_tier",
]

# Imported on first use (see turnkit._lazy): the TYPE_CHECKING block above is the list.
if not typing.TYPE_CHECKING:  # type checkers read the imports above instead
    __getattr__, __dir__ = _lazy_exports(__name__)
