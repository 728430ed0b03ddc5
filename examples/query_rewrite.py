"""Query rewriting: resolve "it" from the conversation before searching.

Turn 1 asks about the Aurora X2 headphones; turn 2 asks "Does it come with a
warranty?". Searched as is, the second question matches whichever warranty
page reads most like it (here the Nimbus speaker's FAQ). A rewrite step
turns the last question and the history into a standalone search query
("Aurora X2 warranty") and the search lands on the right page.

This example overrides `derive_query` in a subclass of `VectorRetrievableGlue`
(the other way is passing `derive_query=` to
`create_vector_retrievable_callbacks`, as `examples/hyde.py` does). The
rewriter is a `ScriptedModel` with a deterministic rule and the encoder is
`HashEncoder`, so the run is the same everywhere, offline.

Run it: `python examples/query_rewrite.py`.
"""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from turnkit import (
    ChatMessage,
    ChatModel,
    Retrievable,
    ScriptedModel,
    TurnContext,
    TurnRunner,
    TurnRunnerConfig,
)
from turnkit.batteries.vector import (
    HashEncoder,
    VectorRetrievableGlue,
    create_vector_retrievable_callbacks,
    create_vector_store,
)

CONVERSATION = ["Tell me about the Aurora X2 headphones.", "Does it come with a warranty?"]

CORPUS = [
    Retrievable(
        id="aurora-overview",
        content="Aurora X2 headphones: noise cancelling, 30 hours of playback, folding design.",
        trust_tier="first-party",
        source="products/aurora-x2.md",
        created_at="2024-04-01T09:00:00Z",
    ),
    Retrievable(
        id="aurora-warranty",
        content=(
            "Aurora X2 headphones carry a two-year warranty against defects in materials and workmanship."
        ),
        trust_tier="first-party",
        source="products/aurora-x2-warranty.md",
        created_at="2024-04-01T09:00:00Z",
    ),
    Retrievable(
        id="nimbus-warranty",
        content="Nimbus speaker FAQ. Does it come with a warranty? Yes, it comes with one year.",
        trust_tier="first-party",
        source="products/nimbus-faq.md",
        created_at="2024-04-01T09:00:00Z",
    ),
]

REWRITE_PROMPT = (
    "Rewrite the user's last question as a standalone search query. Replace pronouns with what they "
    "refer to in the conversation. Answer with the query only."
)
PRODUCTS = ("Aurora X2", "Nimbus")
FILLER = {"a", "about", "come", "comes", "does", "it", "its", "me", "tell", "the", "they", "them", "with"}


def rewrite(messages: Sequence[ChatMessage]) -> str:
    """Stand-in for a rewriting model: name the product the conversation is about, keep the keywords."""
    lines = messages[-1].content.splitlines()
    question = lines[-1].removeprefix("user: ")
    topic = next(
        (p for line in reversed(lines) for p in PRODUCTS if p.lower() in line.lower()),
        None,
    )
    words = [w for w in re.findall(r"[A-Za-z0-9]+", question) if w.lower() not in FILLER]
    if topic is not None and topic.lower() not in question.lower():
        words.insert(0, topic)
    return " ".join(words)


class RewritingGlue(VectorRetrievableGlue):
    """Retrieval glue whose query is the rewriter's standalone version of the last question."""

    def __init__(self, *, rewriter: ChatModel, **options: Any) -> None:
        super().__init__(**options)
        self.rewriter = rewriter
        self.queries: list[str] = []

    async def derive_query(self, ctx: TurnContext) -> str | None:
        messages = await ctx.fetch_messages()
        if not any(m.role == "user" for m in messages):
            return None
        transcript = "\n".join(f"{m.role}: {m.content}" for m in messages)
        reply = self.rewriter.complete(
            [ChatMessage(role="system", content=REWRITE_PROMPT), ChatMessage(role="user", content=transcript)]
        )
        query = await reply if inspect.isawaitable(reply) else reply  # ChatModel.complete may be sync
        self.queries.append(query)
        return query


def answer(messages: Sequence[ChatMessage]) -> str:
    """Stand-in for the answering model: cite the first document it was given."""
    sources = re.findall(r'<document id="[^"]+" source="([^"]+)"', messages[0].content)
    return f"See {sources[0]}." if sources else "I don't know."


@dataclass(frozen=True)
class Outcome:
    """What the demo found, for printing and for the tests."""

    rewritten: list[str]
    retrieved: list[list[str]]
    plain_ids: list[str]
    replies: list[str | None]


async def run_demo() -> Outcome:
    vs = create_vector_store(uri="memory://", encoder=HashEncoder(256))
    glue = RewritingGlue(
        rewriter=ScriptedModel(rewrite), store=vs, collection="products", trust_tier="first-party", top_k=1
    )
    runner = TurnRunner(TurnRunnerConfig(model=ScriptedModel(answer), **glue.callbacks()))
    admin = runner.new_context()
    for record in CORPUS:
        await admin.store_retrievable(record)

    results = [await runner.run(text, conversation_id="customer-42") for text in CONVERSATION]

    # The last question searched as is, through the default glue, for comparison.
    plain = create_vector_retrievable_callbacks(
        store=vs, collection="products", trust_tier="first-party", top_k=1
    )
    plain_hits = await plain.fetch_retrievables(runner.new_context(conversation_id="customer-42"))
    return Outcome(
        rewritten=glue.queries,
        retrieved=[[r.id for r in result.retrievables] for result in results],
        plain_ids=[r.id for r in plain_hits],
        replies=[result.reply for result in results],
    )


def main() -> Outcome:
    outcome = asyncio.run(run_demo())
    for text, query, ids, reply in zip(
        CONVERSATION, outcome.rewritten, outcome.retrieved, outcome.replies, strict=True
    ):
        print(f"user: {text}\n  query: {query!r} -> {ids}\n  reply: {reply}")
    print("last question searched as is:", outcome.plain_ids)
    return outcome


if __name__ == "__main__":
    main()
