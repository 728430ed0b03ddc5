"""An ingested chunk reaches a prompt with its source, section and stored timestamps (default mapping)."""

from __future__ import annotations

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
    fetched_at = datetime.now(UTC)

    callbacks = create_vector_retrievable_callbacks(store=store, collection="kb", trust_tier="third-party")
    runner = TurnRunner(TurnRunnerConfig(model=ScriptedModel(["ok"]), **callbacks))
    result = runner.run_sync("how long do refunds take to reach the card?")

    (record,) = [r for r in result.retrievables if "five business days" in r.content]
    assert record.source == "guides/refunds.md § Payments › Refunds"
    assert record.kind == "markdown"
    # The stored write time, not the time of this fetch.
    (row,) = store("kb").get_sync([record.id])
    assert before <= record.created_at == row.created_at < fetched_at
    assert record.updated_at == row.updated_at == record.created_at
    assert record.metadata["source_uri"].startswith("file://")
    rendered = "\n".join(m.content for m in result.prompt)
    assert 'source="guides/refunds.md § Payments › Refunds"' in rendered


def test_turnkit_ingest_to_a_rendered_prompt_with_page_spans(tmp_path: Path) -> None:
    """The command line's ingest, then the default mapping: source, section, page span, stored times."""
    import subprocess
    import sys

    from tests.ingest.conftest import write_pdf

    root = tmp_path / "docs"
    root.mkdir()
    (root / "faq.md").write_text("# Shipping\n\nParcels leave the Lyon warehouse within two days.\n")
    write_pdf(root / "manual.pdf", [["Unpack the kettle carefully."], ["Descale the kettle every month."]])
    uri = str(tmp_path / "db")
    before = datetime.now(UTC)
    argv = [sys.executable, "-m", "turnkit.cli", "ingest", str(root), "--uri", uri, "-c", "kb"]
    done = subprocess.run([*argv, "--encoder", "hash:64", "--no-progress"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    after_ingest = datetime.now(UTC)

    store = create_vector_store(uri, encoder=HashEncoder(64), auto_optimize=None)
    callbacks = create_vector_retrievable_callbacks(
        store=store, collection="kb", trust_tier="third-party", top_k=5
    )
    runner = TurnRunner(TurnRunnerConfig(model=ScriptedModel(["ok"]), **callbacks))
    result = runner.run_sync("how often should the kettle be descaled?")

    by_source = {r.source: r for r in result.retrievables}
    assert "faq.md § Shipping" in by_source
    (pdf,) = [r for r in result.retrievables if r.source.startswith("manual.pdf")]
    assert pdf.metadata["page_span"] == {"first_page": 1, "last_page": 2}
    assert pdf.source == "manual.pdf (pp. 1–2)"
    stored = {m.id: m for m in store("kb").get_sync([r.id for r in result.retrievables])}
    rendered = "\n".join(m.content for m in result.prompt)
    for record in result.retrievables:
        assert before <= record.created_at <= after_ingest  # written by the ingest, not the fetch
        # The stored columns, as they are, reach the record and the prompt.
        row = stored[record.id]
        assert (record.created_at, record.updated_at) == (row.created_at, row.updated_at)
        shown = record.updated_at.isoformat(timespec="seconds").replace("+00:00", "Z")
        assert f'id="{record.id}" source="{record.source}"' in rendered
        assert f'updated_at="{shown}"' in rendered
    assert 'source="faq.md § Shipping"' in rendered and 'source="manual.pdf (pp. 1–2)"' in rendered
