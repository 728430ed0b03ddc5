"""``turnkit demo``: turnkit's own docs, ingested and asked about through a real `TurnRunner`.

One turn per question; without a model endpoint the answer is extractive (see `_extractive`).
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._config import flag_or_env, store_uri
from ._errors import EXIT_OK, CliUsageError
from ._extractive import Quote, extract_answer
from ._output import emit_json
from ._shipped_docs import shipped_docs

if TYPE_CHECKING:
    from .. import ChatModel, TurnResult

__all__ = ["DEMO_COLLECTION", "DEMO_QUESTIONS", "run_demo"]

DEMO_COLLECTION = "turnkit-docs"
DEMO_QUESTIONS = (
    "How are documents split into chunks?",
    "Why does turnkit never assign a trust tier?",
    "How do I filter by metadata with a text expression?",
)
_SYSTEM_PROMPT = (
    "You answer questions about turnkit, a Python kit that makes a LanceDB vector index an "
    "agent's retrieval memory. Answer from the retrieved documentation only, in a few sentences, "
    "and cite the source of each fact. If the documentation does not say, say so."
)
_TOKEN_BUDGET = 6000
_ENV_MODEL = ("TURNKIT_OPENAI_MODEL", "TURNKIT_MODEL")
_ENV_BASE_URL = ("TURNKIT_OPENAI_BASE_URL", "OPENAI_BASE_URL")
_ENV_API_KEY = ("TURNKIT_OPENAI_API_KEY", "OPENAI_API_KEY")
_DEFAULT_BASE_URL = "https://api.openai.com/v1"
_RULE = "─" * 72
_REPORTED = ("files_seen", "files_written", "files_unchanged", "chunks_written", "elapsed_s")  # --json


def _model(args: argparse.Namespace) -> ChatModel | None:
    """The configured OpenAI-compatible model, or None when no model name is set."""
    from .. import OpenAIChatModel

    name = flag_or_env(args.model, *_ENV_MODEL)
    explicit_url = flag_or_env(args.base_url, _ENV_BASE_URL[0])
    if not name:
        if explicit_url:
            raise CliUsageError(
                f"A model endpoint is set ({explicit_url}) but no model name.",
                hint="Set TURNKIT_OPENAI_MODEL (or pass --model) to the model to call.",
                field="model",
            )
        return None
    base_url = flag_or_env(args.base_url, *_ENV_BASE_URL) or _DEFAULT_BASE_URL
    return OpenAIChatModel(name, base_url=base_url, api_key=flag_or_env(None, *_ENV_API_KEY))


def _wrap(text: str, indent: str) -> str:
    return textwrap.fill(text, width=96, initial_indent=indent, subsequent_indent=indent + "  ")


def _print_turn(
    heading: str,
    result: TurnResult,
    args: argparse.Namespace,
    model: ChatModel | None,
    quotes: Sequence[Quote],
) -> None:
    print(f"\n{_RULE}\n{heading}\n{_RULE}")
    if model is not None:
        print(f"Answer ({model!r}):")
        print("\n".join(_wrap(line, "  ") for line in (result.reply or "").splitlines() if line.strip()))
    elif quotes:
        print("Answer (extractive: the retrieved sentences closest to the question, quoted, not generated):")
        for quote in quotes:
            print(_wrap(f"• {quote.text}", "  "))
            print(f"      — {quote.source}")
    else:
        print("Answer (extractive): nothing retrieved reads like an answer to this question.")
    print(f"Sources ({len(result.retrievables)} retrieved, top_k={args.top_k}):")
    for n, r in enumerate(result.retrievables, 1):
        score = f"{r.score:.3f}" if r.score is not None else "-"
        print(f"  {n}. score {score}  {r.trust_tier}  {r.source}")
        copies = r.metadata.get("duplicates")
        if isinstance(copies, list) and copies:  # the same text elsewhere, collapsed into this chunk
            print(f"       also in: {', '.join(map(str, copies))}")
    for r in result.dropped:
        print(f"  (left out to fit the token budget: {r.source})")
    tokens = result.tokens
    if tokens is not None:
        print(
            f"Prompt: {tokens.prompt} tokens of a {tokens.budget} budget ({tokens.encoding}: "
            f"system {tokens.system}, retrieved {tokens.retrieved}, question {tokens.turn}, "
            f"framing {tokens.overhead})" + ("" if args.show_prompt else "; --show-prompt prints it")
        )
    if args.show_prompt:
        print("\nThe prompt a model receives:")
        for message in result.prompt:
            print(f"┌── {message.role}")
            for line in message.content.splitlines():
                print(f"│ {line}")
            print("└──")


def _turn_json(
    question: str, result: TurnResult, model: ChatModel | None, quotes: Sequence[Quote]
) -> dict[str, Any]:
    return {
        "question": question,
        "retrieved": [
            {
                "id": r.id,
                "source": r.source,
                "score": r.score,
                "trust_tier": r.trust_tier,
                "duplicates": r.metadata.get("duplicates", []),
            }
            for r in result.retrievables
        ],
        "prompt_tokens": None if result.tokens is None else result.tokens.prompt,
        "answer": result.reply if model is not None else None,
        "answer_kind": "model" if model is not None else "extractive",
        "extractive_answer": [
            {"text": q.text, "source": q.source, "score": round(q.score, 4)} for q in quotes
        ],
        "prompt": [m.to_dict() for m in result.prompt],
    }


def run_demo(args: argparse.Namespace) -> int:
    """Ingest the shipped docs, then answer the questions through a `TurnRunner`."""
    from .. import ScriptedModel, TurnRunner, TurnRunnerConfig
    from ..batteries.vector import WordLlamaEncoder, create_vector_retrievable_callbacks, create_vector_store
    from ..ingest import ingest_sync

    questions = [q for q in (args.question or DEMO_QUESTIONS) if q.strip()]
    if not questions:
        raise CliUsageError("Every --question is empty.", hint='Ask something: --question "…".')
    model = _model(args)  # a bad endpoint configuration fails before any work
    docs = shipped_docs()
    encoder = WordLlamaEncoder()
    store = create_vector_store(store_uri(args.uri), encoder=encoder)
    # prune: a page removed from the docs leaves the demo too. Idempotent: a rerun writes nothing.
    report = ingest_sync(docs, store=store, collection=DEMO_COLLECTION, prune=True, progress=False)
    store.wait_for_maintenance_sync()
    callbacks = create_vector_retrievable_callbacks(
        store=store,
        collection=DEMO_COLLECTION,
        trust_tier="first-party",  # turnkit's own docs: vetted by us, so the deployer says so
        # Otherwise the settings every surface defaults to: hybrid search, copies collapsed. Three
        # chunks keep each turn's printout short; the default mapping gives each its file and section.
        top_k=args.top_k,
    )
    runner = TurnRunner(
        TurnRunnerConfig(
            # Without a model the turn still runs (the prompt is built); the reply is empty.
            model=model if model is not None else ScriptedModel(lambda _: ""),
            system_prompt=_SYSTEM_PROMPT,
            token_budget=_TOKEN_BUDGET,
            **callbacks,
        )
    )
    if not args.json:
        print(
            f"Ingested turnkit's docs ({docs}) into {args.uri!r}, collection {DEMO_COLLECTION!r}, "
            f"with {store.encoder!r}:"
        )
        print(f"  {report}".replace("\n", "\n  "))
        if model is None:
            print(
                "\nNo model endpoint is configured, so each answer below is extractive: sentences quoted\n"
                "from the retrieved chunks, with their sources. For generated answers, set\n"
                "TURNKIT_OPENAI_MODEL (and TURNKIT_OPENAI_BASE_URL, TURNKIT_OPENAI_API_KEY as needed)\n"
                "for any OpenAI-compatible endpoint."
            )
    turns: list[dict[str, Any]] = []
    for i, question in enumerate(questions, 1):
        # One conversation per question: each prompt holds only its own question.
        result = runner.run_sync(question, conversation_id=f"demo-{i}")
        quotes = extract_answer(question, result.retrievables, encoder) if model is None else []
        if args.json:
            turns.append(_turn_json(question, result, model, quotes))
        else:
            _print_turn(f"Question {i}/{len(questions)}: {question}", result, args, model, quotes)
        sys.stdout.flush()
    if args.json:
        emit_json(
            {
                "uri": args.uri,
                "collection": DEMO_COLLECTION,
                "docs": str(docs),
                "ingest": {name: getattr(report, name) for name in _REPORTED},
                "model": None if model is None else repr(model),
                "turns": turns,
            }
        )
    return EXIT_OK
