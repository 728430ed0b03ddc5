"""An ingested chunk reaches a prompt with its source, section and stored timestamps (default mapping)."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

from turnkit import ScriptedModel, TurnRunner, TurnRunnerConfig
from turnkit.batteries.vector import HashEncoder, create_vector_retrievable_callbacks, create_vector_store
from turnkit.ingest import ingest_sync


def test_ingested_chunk_reaches_the_prompt_with_its_source_and_timestamps(tmp_path: Path) -> None:
    root = tmp_path / "handbook"
    (root / "guides").mkdir(parents=True)
    (root / "guides" / "refunds.md").write_text(
        "# Payments\n\n## Refunds\n\nRefunds reach the original card within five business days.\n"
    )
    store = create_vector_store(tmp_path / "db", encoder=HashEncoder(64), auto_optimize=None)
    before = datetime.now(UTC)
    ingest_sync([root], store=store, collection="kb", progress=False)
    time.sleep(0.01)

    callbacks = create_vector_retrievable_callbacks(store=store, collection="kb", trust_tier="third-party")
    runner = TurnRunner(TurnRunnerConfig(model=ScriptedModel(["ok"]), **callbacks))
    result = runner.run_sync("how long do refunds take to reach the card?")

    (record,) = [r for r in result.retrievables if "five business days" in r.content]
    assert record.source == "guides/refunds.md § Payments › Refunds"
    assert record.kind == "markdown"
    # The stored write time, not the time of this fetch.
    assert before <= record.created_at <= datetime.now(UTC)
    fetched_after = datetime.now(UTC)
    assert record.created_at < fetched_after and record.updated_at == record.created_at
    assert record.metadata["source_uri"].startswith("file://")
    rendered = "\n".join(m.content for m in result.prompt)
    assert 'source="guides/refunds.md § Payments › Refunds"' in rendered
