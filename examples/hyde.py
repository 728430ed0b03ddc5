"""HyDE: search with a hypothetical answer instead of the question.

A customer writes "my parcel showed up smashed, can I get my money back?";
the policy that answers it talks about items "damaged in transit" being
"refunded". The question and the answer share almost no words, so searching
with the question finds the wrong page. HyDE (Hypothetical Document
Embeddings) asks a model to *draft* the passage that would answer, embeds that
draft like a document, and searches near it: drafts and real answers look alike.

The glue makes this one function: `derive_query` returns the draft's vector,
and `create_vector_retrievable_callbacks` does the rest. Both models here are
`ScriptedModel`s and the encoder is the deterministic `HashEncoder`, so the run
is the same on every machine, offline. Swap in `OpenAIChatModel.from_env()` and
`WordLlamaEncoder()` for the real thing.

Run it: `python examples/hyde.py`.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass

from turnkit import ChatMessage, Retrievable, ScriptedModel, TurnContext, TurnRunner, TurnRunnerConfig
from turnkit.batteries.vector import (
    HashEncoder,
    create_vector_retrievable_callbacks,
    create_vector_store,
    encode_texts,
)

QUESTION = "My parcel showed up smashed. Can I get my money back?"

CORPUS = [
    Retrievable(
        id="policy-damaged",
        content="Items damaged in transit are refunded in full: send a photo of the damage within 14 days.",
        trust_tier="first-party",
        source="policies/damaged-items.md",
        created_at="2024-02-01T09:00:00Z",
    ),
    Retrievable(
        id="help-tracking",
        content="Every parcel gets a tracking link, so you can see when your parcel will show up.",
        trust_tier="first-party",
        source="help/tracking.md",
        created_at="2024-02-01T09:00:00Z",
    ),
    Retrievable(
        id="policy-gift-cards",
        content="Gift cards can not be exchanged for money or sent back.",
        trust_tier="first-party",
        source="policies/gift-cards.md",
        created_at="2024-02-01T09:00:00Z",
    ),
]

DRAFT_PROMPT = "Write the short help-centre passage that answers the customer's question. Do not hedge."


def draft(messages: Sequence[ChatMessage]) -> str:
    """Stand-in for a model drafting a plausible (not necessarily true) answer passage."""
    question = messages[-1].content.lower()
    if re.search(r"smash|broken|damag", question):
        return "Damaged items are refunded in full. Send a photo of the damage and the refund follows."
    return messages[-1].content


def answer(messages: Sequence[ChatMessage]) -> str:
    """Stand-in for the answering model: cite the first document it was given."""
    sources = re.findall(r'<document id="[^"]+" source="([^"]+)"', messages[0].content)
    return f"Yes: damaged items are refunded in full; send us a photo. [{sources[0]}]"


@dataclass(frozen=True)
class Outcome:
    """What the demo found, for printing and for the tests."""

    draft: str
    plain_ids: list[str]
    hyde_ids: list[str]
    reply: str | None
    used: list[tuple[str, str]]


async def run_demo() -> Outcome:
    vs = create_vector_store(uri="memory://", encoder=HashEncoder(256))
    drafter = ScriptedModel(draft)
    drafts: list[str] = []

    async def hyde_query(ctx: TurnContext) -> list[float] | None:
        question = await ctx.last_user_message()
        if question is None:
            return None
        passage = await drafter.complete(
            [
                ChatMessage(role="system", content=DRAFT_PROMPT),
                ChatMessage(role="user", content=question.content),
            ]
        )
        drafts.append(passage)
        # Embedded as a *document*: the draft stands in for the passage we hope to find.
        assert vs.encoder is not None
        vectors = await encode_texts(vs.encoder, [passage], "document")
        return [float(x) for x in vectors[0]]

    plain = create_vector_retrievable_callbacks(
        store=vs, collection="help", trust_tier="first-party", top_k=1
    )
    hyde = create_vector_retrievable_callbacks(
        store=vs, collection="help", trust_tier="first-party", top_k=1, derive_query=hyde_query
    )

    runner = TurnRunner(TurnRunnerConfig(model=ScriptedModel(answer), **hyde))
    admin = runner.new_context()
    for record in CORPUS:
        await admin.store_retrievable(record)  # the store encodes each document

    result = await runner.run(QUESTION)
    # The same question through the default glue (the last user message is the query).
    plain_hits = await plain.fetch_retrievables(runner.new_context())
    return Outcome(
        draft=drafts[0],
        plain_ids=[r.id for r in plain_hits],
        hyde_ids=[r.id for r in result.retrievables],
        reply=result.reply,
        used=[(r.id, r.trust_tier) for r in result.retrievables],
    )


def main() -> Outcome:
    outcome = asyncio.run(run_demo())
    print("question:", QUESTION)
    print("plain search:", outcome.plain_ids)
    print("draft:", outcome.draft)
    print("HyDE search:", outcome.hyde_ids)
    print("reply:", outcome.reply)
    return outcome


if __name__ == "__main__":
    main()
