"""turnkit: agent retrieval memory over a LanceDB vector index."""

import typing

from ._errors import (
    ERROR_CODES,
    ModelError,
    PipelineError,
    RuntimeFailure,
    TrustTierRequiredError,
    TurnkitError,
    UnknownTrustTierError,
    UsageError,
)
from ._lazy import lazy_exports as _lazy_exports

if typing.TYPE_CHECKING:
    from ._context import TurnContext
    from ._messages import ChatMessage, InMemoryMessageStore, Message
    from ._models import ChatModel, OpenAIChatModel, ScriptedModel
    from ._prompt import SAFETY_DIRECTIVE, RenderedPrompt, render_prompt
    from ._retrievable import (
        TRUST_TIERS,
        RawRetrievable,
        Retrievable,
        TrustTier,
        trust_rank,
        validate_trust_tier,
    )
    from ._runner import (
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
    from ._tokens import count_tokens

__version__ = "0.1.0"

__all__ = [
    "ChatMessage",
    "ChatModel",
    "ERROR_CODES",
    "GROUNDING_STASH_KEY",
    "InMemoryMessageStore",
    "Message",
    "Middleware",
    "ModelError",
    "NO_GROUNDED_ANSWER",
    "Next",
    "OpenAIChatModel",
    "PipelineError",
    "RawRetrievable",
    "RenderedPrompt",
    "Retrievable",
    "RuntimeFailure",
    "SAFETY_DIRECTIVE",
    "ScriptedModel",
    "TRUST_TIERS",
    "TrustTier",
    "TrustTierRequiredError",
    "TurnContext",
    "TurnEvent",
    "TurnResult",
    "TurnRunner",
    "TurnRunnerConfig",
    "TurnkitError",
    "UnknownTrustTierError",
    "UsageError",
    "count_tokens",
    "fetch_retrievables_stage",
    "render_prompt",
    "trust_rank",
    "validate_trust_tier",
]

# Imported on first use (see turnkit._lazy): the TYPE_CHECKING block above is the list.
if not typing.TYPE_CHECKING:  # type checkers read the imports above instead
    __getattr__, __dir__ = _lazy_exports(__name__)
