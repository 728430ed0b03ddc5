import io
import sys

import pytest

from turnkit.ingest import (
    IngestReport,
    IngestUsageError,
    chunk_document,
    ingest,
    ingest_sync,
    load_document,
    source_uri_for,
)

LONG = " ".join(f"Sentence {i} explains one more detail of the install." for i in range(120))


def build_corpus(root, make_pdf):
    """A folder with one real file of each type, plus files that must be skipped or reported."""
    (root / "sub").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "readme.txt").write_text("Plain text file.\n\nIt has two paragraphs.\n")
    (root / "guide.md").write_text(
        f"# Guide\n\nIntro.\n\n## Install\n\n{LONG}\n\n### Linux\n\nUse apt.\n\n## Usage\n\nRun it.\n"
    )
    (root / "sub" / "page.html").write_text(
        "<html><head><title>T</title><script>var x = 'secret';</script><style>p{}</style></head>"
        "<body><h1>Page</h1><p>Visible words here.</p><h2>More</h2><p>And more.</p></body></html>"
    )
    make_pdf(root / "sub" / "book.pdf", [["First page text."], ["Second page text."], ["Third page text."]])
    (root / ".git" / "hidden.md").write_text("# never ingested")
    (root / "notes.xyz").write_text("unknown extension")
    (root / "broken.txt").write_bytes(b"caf\xe9")
    (root / "corrupt.pdf").write_bytes(b"%PDF-1.7\n1 0 obj garbage")
    (root / "dangling.md").symlink_to(root / "nowhere.md")
    (root / "empty.txt").write_text("  \n")
    return root


def stored(store, collection):
    rows = store(collection).select("id", "document", "metadata").limit(10_000).search_sync()
    assert store(collection).count_sync() == len(rows) == len({r.id for r in rows})  # no duplicates
    return {r.id: r for r in rows}


def expected_ids(path, display_name, **settings):
    doc = load_document(path, display_name=display_name)
    return {c.id for c in chunk_document(doc, **settings)}


@pytest.fixture
def corpus(tmp_path, make_pdf):
    return build_corpus(tmp_path / "corpus", make_pdf)


def test_first_run_ingests_every_type_and_reports_the_rest(store, collection, corpus):
    report = ingest_sync(corpus, store=store, collection=collection, chunk_size=128, chunk_overlap=16)
    assert isinstance(report, IngestReport)
    assert report.files_written == 4  # txt, md, html, pdf
    assert report.files_unchanged == 0
    assert {(i.path.rsplit("/", 1)[-1], i.code) for i in report.errors} == {
        ("broken.txt", "E_INGEST_DECODE_FAILED"),
        ("corrupt.pdf", "E_INGEST_PARSE_FAILED"),
        ("dangling.md", "E_INGEST_READ_FAILED"),
    }
    assert all(i.reason for i in report.errors)
    assert {(i.path.rsplit("/", 1)[-1], i.code) for i in report.skipped} == {
        ("notes.xyz", "E_INGEST_UNSUPPORTED_FILE"),
        ("empty.txt", "E_INGEST_NO_TEXT"),
    }
    assert report.files_seen == 9
    assert not report.ok
    rows = stored(store, collection)
    assert report.chunks_written == len(rows)
    want = set()
    for rel in ("readme.txt", "guide.md", "sub/page.html", "sub/book.pdf"):
        want |= expected_ids(corpus / rel, rel, chunk_size=128, chunk_overlap=16)
    assert set(rows) == want

    by_kind = {}
    for row in rows.values():
        by_kind.setdefault(row.metadata["kind"], []).append(row)
    assert set(by_kind) == {"text", "markdown", "html", "pdf"}
    md = sorted(by_kind["markdown"], key=lambda r: r.metadata["chunk_index"])
    assert md[0].metadata["source_display_name"] == "guide.md"
    assert md[0].metadata["source_uri"] == source_uri_for(corpus / "guide.md")
    assert {tuple(r.metadata["heading_path"]) for r in md} == {
        ("Guide",),
        ("Guide", "Install"),
        ("Guide", "Install", "Linux"),
        ("Guide", "Usage"),
    }
    assert all(r.metadata["chunk_count"] == len(md) for r in md)
    html = by_kind["html"]
    assert html[0].metadata["source_display_name"] == "sub/page.html"
    assert not any("secret" in r.document for r in html)
    pdf = by_kind["pdf"][0]
    assert pdf.metadata["page_span"] == {"first_page": 1, "last_page": 3}
    for row in rows.values():
        meta = row.metadata
        assert meta["file_hash"] and meta["content_hash"] and meta["mtime"] and meta["ingest_fingerprint"]
    assert "hidden" not in str([r.metadata["source_uri"] for r in rows.values()])
    text = str(report)
    assert "4 written" in text and "broken.txt" in text and "E_INGEST_DECODE_FAILED" in text


def test_second_run_writes_nothing(store, collection, corpus):
    first = ingest_sync(corpus, store=store, collection=collection, chunk_size=128, chunk_overlap=16)
    version = store.collection_info_sync(collection).version
    before = stored(store, collection)
    again = ingest_sync(corpus, store=store, collection=collection, chunk_size=128, chunk_overlap=16)
    assert (again.files_written, again.files_unchanged) == (0, 4)
    assert (again.chunks_written, again.chunks_deleted) == (0, 0)
    assert store.collection_info_sync(collection).version == version  # not one commit
    assert stored(store, collection).keys() == before.keys()
    assert len(again.errors) == len(first.errors) == 3


def test_changed_file_is_replaced_without_stale_chunks(store, collection, corpus):
    ingest_sync(corpus, store=store, collection=collection, chunk_size=128, chunk_overlap=16)
    before = stored(store, collection)
    guide = corpus / "guide.md"
    guide.write_text("# Guide\n\nA much shorter guide now.\n")
    report = ingest_sync(corpus, store=store, collection=collection, chunk_size=128, chunk_overlap=16)
    assert (report.files_written, report.files_unchanged) == (1, 3)
    rows = stored(store, collection)
    uri = source_uri_for(guide)
    mine = {i for i, r in rows.items() if r.metadata["source_uri"] == uri}
    assert mine == expected_ids(guide, "guide.md", chunk_size=128, chunk_overlap=16)
    old = {i for i, r in before.items() if r.metadata["source_uri"] == uri}
    assert report.chunks_deleted == len(old - mine) > 0
    assert {i for i in rows if i not in mine} == {i for i in before if i not in old}  # others untouched


def test_new_settings_rewrite_everything_cleanly(store, collection, corpus):
    ingest_sync(corpus, store=store, collection=collection, chunk_size=128, chunk_overlap=16)
    report = ingest_sync(corpus, store=store, collection=collection, chunk_size=64, chunk_overlap=8)
    assert report.files_written == 4
    want = set()
    for rel in ("readme.txt", "guide.md", "sub/page.html", "sub/book.pdf"):
        want |= expected_ids(corpus / rel, rel, chunk_size=64, chunk_overlap=8)
    assert set(stored(store, collection)) == want


def test_file_that_becomes_empty_loses_its_chunks(store, collection, corpus):
    ingest_sync(corpus, store=store, collection=collection)
    (corpus / "readme.txt").write_text("\n")
    report = ingest_sync(corpus, store=store, collection=collection)
    uri = source_uri_for(corpus / "readme.txt")
    assert not store(collection).where("metadata.source_uri", uri).count_sync()
    assert report.chunks_deleted == 1
    assert any(i.code == "E_INGEST_NO_TEXT" and i.path.endswith("readme.txt") for i in report.skipped)


def test_prune_removes_deleted_files_only_when_asked(store, collection, corpus, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.md").write_text("# Keep\n\nOutside the pruned folder.\n")
    ingest_sync([corpus, other / "keep.md"], store=store, collection=collection)
    (corpus / "guide.md").unlink()
    kept = ingest_sync(corpus, store=store, collection=collection)
    uri = source_uri_for(corpus / "guide.md")
    assert kept.files_pruned == 0
    assert store(collection).where("metadata.source_uri", uri).count_sync() > 0
    (other / "keep.md").unlink()  # deleted, but not under the folder being pruned
    pruned = ingest_sync(corpus, store=store, collection=collection, prune=True)
    assert pruned.files_pruned == 1 and pruned.chunks_deleted > 0
    assert store(collection).where("metadata.source_uri", uri).count_sync() == 0
    keep_uri = source_uri_for(other / "keep.md")
    assert store(collection).where("metadata.source_uri", keep_uri).count_sync() == 1
    # a file path that no longer exists: reported, and pruned when asked
    gone = ingest_sync(other / "keep.md", store=store, collection=collection, prune=True)
    assert gone.errors[0].reason == "no such file or directory"
    assert gone.files_pruned == 1
    assert store(collection).where("metadata.source_uri", keep_uri).count_sync() == 0


def _encoder(name, fail_on_call=None):
    """HashEncoder(32)'s vectors under another name; with ``fail_on_call``, that call (1-based) raises."""
    from turnkit.batteries.vector import FunctionEncoder, HashEncoder

    hashed, calls = HashEncoder(32), []

    def encode(texts, kind):
        calls.append(list(texts))
        if len(calls) == fail_on_call:
            raise RuntimeError("the model server went away")
        return hashed.encode(texts, kind=kind)

    return FunctionEncoder(encode, name=name, dimension=32, batch_size=4)


def test_a_collection_built_with_another_encoder_gets_no_rows(collection, corpus, tmp_path):
    from turnkit.batteries.vector import (
        VectorStoreUsageError,
        create_vector_store,
    )

    uri = str(tmp_path / "db")
    first = _encoder("first")
    ingest_sync(
        corpus / "readme.txt", store=create_vector_store(uri=uri, encoder=first), collection=collection
    )
    second = _encoder("second")  # same dimension: only the recorded name tells them apart
    vs = create_vector_store(uri=uri, encoder=second, auto_optimize=None)
    before = vs.collection_info_sync(collection).version
    with pytest.raises(VectorStoreUsageError) as exc_info:
        ingest_sync(corpus, store=vs, collection=collection, chunk_size=32, chunk_overlap=4, batch_size=2)
    assert exc_info.value.code == "E_VECTOR_STORE_ENCODER_MISMATCH"
    # Every batch is encoded by the store, which checks the encoder first: no row of the run is
    # written with the wrong model's vectors.
    assert vs.collection_info_sync(collection).version == before
    assert vs(collection).count_sync() == 1


def test_an_encoder_failure_mid_run_stops_it_and_a_rerun_completes(collection, corpus, tmp_path):
    from turnkit.batteries.vector import (
        VectorStoreRuntimeError,
        create_vector_store,
    )

    uri = str(tmp_path / "db")
    flaky = _encoder("hash32", fail_on_call=4)
    options = {"collection": collection, "chunk_size": 32, "chunk_overlap": 4, "batch_size": 4}
    with pytest.raises(VectorStoreRuntimeError) as caught:
        ingest_sync(corpus, store=create_vector_store(uri=uri, encoder=flaky, auto_optimize=None), **options)
    assert caught.value.code == "E_VECTOR_STORE_ENCODER_FAILED"
    assert caught.value.context["collection"] == collection
    assert "model server went away" in str(caught.value)
    steady = _encoder("hash32")
    vs = create_vector_store(uri=uri, encoder=steady, auto_optimize=None)
    written = vs(collection).count_sync()
    report = ingest_sync(corpus, store=vs, **options)
    assert report.chunks_written > 0  # the files the failed run did not finish
    rows = stored(vs, collection)
    assert len(rows) > written > 0
    assert ingest_sync(corpus, store=vs, **options).chunks_written == 0


def test_the_encoder_is_never_called_twice_at_once(collection, corpus, tmp_path):
    import threading
    import time

    from turnkit.batteries.vector import FunctionEncoder, HashEncoder, create_vector_store

    hashed, lock, running, most = HashEncoder(32), threading.Lock(), [0], [0]

    def encode(texts, kind):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.02)  # wide enough for an overlapping call to show
        with lock:
            running[0] -= 1
        return hashed.encode(texts, kind=kind)

    # Not every encoder is thread-safe (a GPU model, a rate-limited API): ingest calls it serially.
    vs = create_vector_store(
        uri=str(tmp_path / "db"),
        encoder=FunctionEncoder(encode, name="slow", dimension=32),
        auto_optimize=None,
    )
    report = ingest_sync(
        corpus, store=vs, collection=collection, chunk_size=32, chunk_overlap=4, batch_size=3
    )
    assert report.chunks_written > 9 and most[0] == 1


def test_batches_span_files_and_give_the_same_result(store, collection, corpus, tmp_path):
    small = ingest_sync(
        corpus, store=store, collection=collection, chunk_size=32, chunk_overlap=4, batch_size=3
    )
    rows_small = stored(store, collection)
    from turnkit.batteries.vector import HashEncoder, create_vector_store

    other = create_vector_store(uri=str(tmp_path / "db2"), encoder=HashEncoder(32), auto_optimize=None)
    big = ingest_sync(
        corpus, store=other, collection=collection, chunk_size=32, chunk_overlap=4, batch_size=1000
    )
    assert small.chunks_written == big.chunks_written > 9
    rows_big = stored(other, collection)
    assert rows_small.keys() == rows_big.keys()
    assert all(rows_small[i].document == rows_big[i].document for i in rows_small)
    vectors = [
        {m.id: m.vector for m in s(collection).select("id", "vector").limit(10_000).search_sync()}
        for s in (store, other)
    ]
    assert vectors[0] == vectors[1]  # batches of 3 or of 1000 encode the same texts the same way


def test_repair_deletes_only_the_stale_rows(store, collection, corpus):
    # The state a crash leaves between "new chunks committed" and "stale chunks deleted".
    ingest_sync(corpus, store=store, collection=collection, chunk_size=64, chunk_overlap=8)
    uri = source_uri_for(corpus / "guide.md")
    old = store(collection).where("metadata.source_uri", uri).select("*").limit(1000).search_sync()
    (corpus / "guide.md").write_text("# Guide\n\nRewritten.\n")
    ingest_sync(corpus, store=store, collection=collection, chunk_size=64, chunk_overlap=8)
    store(collection).upsert_sync(
        [{"id": m.id, "document": m.document, "vector": m.vector, "metadata": m.metadata} for m in old]
    )
    report = ingest_sync(corpus, store=store, collection=collection, chunk_size=64, chunk_overlap=8)
    assert (report.files_written, report.chunks_written, report.chunks_deleted) == (1, 0, len(old))
    mine = {
        m.id
        for m in store(collection).where("metadata.source_uri", uri).select("id").limit(100).search_sync()
    }
    assert mine == expected_ids(corpus / "guide.md", "guide.md", chunk_size=64, chunk_overlap=8)


@pytest.mark.parametrize("lookup_files", [2, 1024], ids=["many-lookups", "one-lookup"])
def test_paging_past_the_search_limit(store, collection, tmp_path, monkeypatch, lookup_files):
    from turnkit.ingest import _pipeline, _store_io

    monkeypatch.setattr(_store_io, "_SCAN_LIMIT", 4)  # page through id ranges with tiny pages
    monkeypatch.setattr(_pipeline, "LOOKUP_FILES", lookup_files)  # files per lookup query
    monkeypatch.setattr(_store_io, "LOOKUP_FILES", lookup_files)
    folder = tmp_path / "many"
    folder.mkdir()
    (folder / "big.txt").write_text(" ".join(f"Sentence {i} is here." for i in range(40)))
    for i in range(6):
        (folder / f"f{i}.md").write_text(f"# File {i}\n\nbody {i}\n")
    first = ingest_sync(
        folder, store=store, collection=collection, chunk_size=16, chunk_overlap=0, batch_size=16
    )
    assert first.chunks_written > 16  # many pages of 4 rows, read by id ranges
    again = ingest_sync(
        folder, store=store, collection=collection, chunk_size=16, chunk_overlap=0, batch_size=16
    )
    assert again.files_unchanged == 7 and again.chunks_written == 0
    for i in range(6):
        (folder / f"f{i}.md").unlink()
    pruned = ingest_sync(
        folder, store=store, collection=collection, chunk_size=16, chunk_overlap=0, prune=True
    )
    assert pruned.files_pruned == 6
    assert store(collection).count_sync() == first.chunks_written - 6


def test_a_rerun_reads_only_the_rows_of_its_own_files(store, collection, tmp_path, monkeypatch):
    # source_uri is an indexed column: a run asks for its files' rows by it, LOOKUP_FILES files per
    # query, and never reads the rest of the collection (runs of more than 64 files once read it all).
    from turnkit.batteries.vector import to_sql
    from turnkit.ingest import _pipeline, _store_io

    ours, others = tmp_path / "ours", tmp_path / "others"
    for folder, files in ((ours, 70), (others, 40)):
        folder.mkdir()
        for i in range(files):
            (folder / f"f{i:02d}.md").write_text(f"# {folder.name} {i}\n\nBody {i}.\n")
        ingest_sync(folder, store=store, collection=collection)
    monkeypatch.setattr(_pipeline, "LOOKUP_FILES", 32)
    monkeypatch.setattr(_store_io, "LOOKUP_FILES", 32)
    scan, lookups = _store_io._scan, []

    async def spy(q, fields, *bounds):
        rows = await scan(q, fields, *bounds)
        lookups.append((to_sql(q.spec.filter, _store_io.INGEST_FIELDS), rows))
        return rows

    monkeypatch.setattr(_store_io, "_scan", spy)
    again = ingest_sync(ours, store=store, collection=collection)
    assert (again.files_unchanged, again.chunks_written) == (70, 0)
    assert len(lookups) == 3  # 32 + 32 + 6 files
    assert all("`source_uri` IN (" in sql and "json" not in sql for sql, _ in lookups)  # the column
    read = sorted(m.metadata["source_uri"] for _, rows in lookups for m in rows)
    assert read == sorted(source_uri_for(path) for path in ours.iterdir())


@pytest.mark.anyio
async def test_async_form(store, collection, corpus):
    report = await ingest(corpus / "guide.md", store=store, collection=collection, progress=False)
    assert report.files_written == 1
    assert await store(collection).count() == report.chunks_written


def test_progress_bar_and_summary_on_a_terminal(store, collection, corpus, monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    term = Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    report = ingest_sync(corpus, store=store, collection=collection, progress=True)
    out = term.getvalue()
    assert "ingest" in out and "file" in out
    assert str(report).splitlines()[0] in out
    term.truncate(0)
    ingest_sync(corpus, store=store, collection=collection, progress=False)
    assert term.getvalue().strip("\x00") == ""


def test_invalid_options(store, collection, corpus):
    from turnkit.batteries.vector import create_vector_store

    with pytest.raises(IngestUsageError) as exc_info:
        ingest_sync(corpus, store=store, collection=collection, chunk_size=10, chunk_overlap=10)
    assert exc_info.value.code == "E_INGEST_INVALID_CHUNKING"
    for bad in ({"batch_size": 0}, {"batch_size": True}, {"workers": 0}):
        with pytest.raises(IngestUsageError) as exc_info:
            ingest_sync(corpus, store=store, collection=collection, **bad)
        assert exc_info.value.code == "E_INGEST_INVALID_OPTION"
    with pytest.raises(IngestUsageError, match="no encoder") as exc_info:
        ingest_sync(corpus, store=create_vector_store(uri="memory://"), collection=collection)
    assert exc_info.value.code == "E_INGEST_INVALID_OPTION"
    with pytest.raises(IngestUsageError) as exc_info:
        ingest_sync(corpus, store=store, collection=collection, extensions={"md": "markdown"})
    assert exc_info.value.code == "E_INGEST_INVALID_OPTION"


def test_extension_overrides(store, collection, corpus):
    report = ingest_sync(
        corpus, store=store, collection=collection, extensions={".xyz": "text", ".pdf": None}
    )
    names = {r.metadata["source_display_name"] for r in stored(store, collection).values()}
    assert "notes.xyz" in names and "sub/book.pdf" not in names
    assert not any(i.path.endswith("corrupt.pdf") for i in report.errors)


def test_nothing_to_ingest(store, collection, tmp_path):
    folder = tmp_path / "nothing"
    folder.mkdir()
    (folder / "data.bin").write_bytes(b"\x00")
    report = ingest_sync(folder, store=store, collection=collection, prune=True)
    assert (report.files_seen, report.chunks_written, report.files_pruned) == (1, 0, 0)
    assert not store.has_collection_sync(collection)
    assert "0 chunks written" in str(report)


def test_a_file_that_fails_unexpectedly_is_reported_and_the_run_goes_on(
    store, collection, tmp_path, make_pdf, monkeypatch
):
    import tiktoken

    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "fine.md").write_text("# Fine\n\nIngested as usual.\n")
    (folder / "poison.txt").write_text("POISON text the tokenizer chokes on.\n")
    make_pdf(folder / "broken-map.pdf", [["AB readable words"]], to_unicode={"A": "D800"})
    real = tiktoken.Encoding.encode_ordinary

    def encode_ordinary(self, text):  # a third-party failure on one file's text
        if "POISON" in text:
            raise RuntimeError("tokenizer exploded")
        return real(self, text)

    monkeypatch.setattr(tiktoken.Encoding, "encode_ordinary", encode_ordinary)
    report = ingest_sync(folder, store=store, collection=collection, progress=False)
    assert [(i.path.rsplit("/", 1)[-1], i.code) for i in report.errors] == [
        ("poison.txt", "E_INGEST_LOAD_FAILED")
    ]
    assert "RuntimeError: tokenizer exploded" in report.errors[0].reason
    assert report.files_written == 2  # the Markdown file and the PDF with lone surrogates
    docs = [r.document for r in stored(store, collection).values()]
    assert any("\ufffd" in d and "readable words" in d for d in docs)


def test_reingesting_from_another_root_writes_nothing(store, collection, tmp_path):
    outer = tmp_path / "outer"
    (outer / "docs").mkdir(parents=True)
    guide = outer / "docs" / "guide.md"
    guide.write_text("# Guide\n\nSame bytes whichever folder is given.\n")
    (outer / "docs" / "faq.txt").write_text("Questions and answers.\n")
    first = ingest_sync(outer / "docs", store=store, collection=collection, progress=False)
    assert first.files_written == 2
    version = store.collection_info_sync(collection).version
    for root in (outer, guide, str(outer / "docs") + "/"):
        again = ingest_sync(root, store=store, collection=collection, progress=False)
        assert (again.files_written, again.chunks_written, again.chunks_deleted) == (0, 0, 0), root
        assert again.files_unchanged == again.files_seen
    assert store.collection_info_sync(collection).version == version  # not one commit
    # The stored display name is the one the chunks were written with.
    names = {r.metadata["source_display_name"] for r in stored(store, collection).values()}
    assert names == {"guide.md", "faq.txt"}


def test_a_changed_file_that_fits_a_batch_is_replaced_in_one_commit(store, collection, corpus):
    ingest_sync(corpus, store=store, collection=collection, chunk_size=128, chunk_overlap=16)
    guide = corpus / "guide.md"
    uri = source_uri_for(guide)
    old = store(collection).where("metadata.source_uri", uri).count_sync()
    version = store.collection_info_sync(collection).version
    guide.write_text("# Guide\n\nA much shorter guide now.\n")
    report = ingest_sync(corpus, store=store, collection=collection, chunk_size=128, chunk_overlap=16)
    # New chunks in and stale chunks out in the same commit: no version holds both, or neither.
    assert store.collection_info_sync(collection).version == version + 1
    assert (report.chunks_written, report.chunks_deleted) == (1, old)
    mine = {
        m.id
        for m in store(collection).where("metadata.source_uri", uri).select("id").limit(1000).search_sync()
    }
    assert mine == expected_ids(guide, "guide.md", chunk_size=128, chunk_overlap=16)


def test_a_changed_file_bigger_than_a_batch_keeps_the_crash_safe_order(store, collection, corpus):
    ingest_sync(corpus, store=store, collection=collection, chunk_size=32, chunk_overlap=4, batch_size=4)
    guide = corpus / "guide.md"
    uri = source_uri_for(guide)
    old = {
        m.id
        for m in store(collection).where("metadata.source_uri", uri).select("id").limit(1000).search_sync()
    }
    guide.write_text(guide.read_text().replace("Sentence", "Line"))
    version = store.collection_info_sync(collection).version
    report = ingest_sync(
        corpus, store=store, collection=collection, chunk_size=32, chunk_overlap=4, batch_size=4
    )
    mine = expected_ids(guide, "guide.md", chunk_size=32, chunk_overlap=4)
    assert len(mine) > 4 and report.chunks_written == len(mine)
    # ceil(N / 4) upserts, then one delete of the old rows once the last of them is in.
    assert store.collection_info_sync(collection).version == version + -(-len(mine) // 4) + 1
    assert report.chunks_deleted == len(old - mine) > 0
    now = {
        m.id
        for m in store(collection).where("metadata.source_uri", uri).select("id").limit(1000).search_sync()
    }
    assert now == mine


def test_a_file_name_that_is_not_utf8_does_not_stop_the_run(store, collection, tmp_path):
    import os

    folder = tmp_path / "names"
    folder.mkdir()
    (folder / "plain.txt").write_text("An ordinary name.\n")
    try:
        with open(os.fsencode(folder) + b"/caf\xe9.txt", "wb") as fh:
            fh.write(b"Text behind a Latin-1 file name.\n")
    except OSError:
        pytest.skip("the file system only takes UTF-8 names")
    report = ingest_sync(folder, store=store, collection=collection, progress=False)
    assert report.ok and report.files_written == 2
    names = {r.metadata["source_display_name"] for r in stored(store, collection).values()}
    assert names == {"plain.txt", "caf\ufffd.txt"}


def test_ingest_declares_the_keys_it_filters_on_and_migrates_an_older_collection(store, collection, tmp_path):
    from turnkit.ingest._store_io import INGEST_FIELDS

    folder = tmp_path / "declared"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nAlpha text.\n")
    ingest_sync(folder, store=store, collection=collection)
    info = store.collection_info_sync(collection)
    assert info.fields == INGEST_FIELDS
    assert {f"{key}_idx" for key in INGEST_FIELDS} <= {i.split(":")[0] for i in info.indexes}
    # A collection written before ingest declared anything is migrated on the next run, rows intact.
    older = f"{collection}old"
    store(older).upsert_sync([{"id": "x", "document": "kept", "metadata": {"source_uri": "elsewhere"}}])
    report = ingest_sync(folder, store=store, collection=older)
    assert report.chunks_written == 1
    assert store.collection_info_sync(older).fields == INGEST_FIELDS
    assert store(older).where("metadata.source_uri", "elsewhere").count_sync() == 1


@pytest.mark.parametrize("workers", [1, 3, 8])
def test_any_number_of_workers_writes_the_same_rows_and_reports_in_order(tmp_path, workers):
    """Each worker takes a slice of a window of files; rows and report follow the files' order."""
    from turnkit.batteries.vector import HashEncoder, create_vector_store

    root = tmp_path / "many"
    root.mkdir()
    for n in range(150):  # more than two windows of files
        if n % 37 == 5:
            (root / f"f{n:03d}.txt").write_bytes(b"caf\xe9 not utf-8")  # an error the report names
        else:
            (root / f"f{n:03d}.md").write_text(f"# File {n}\n\n{LONG[: 40 + n * 7]}\n")
    one = create_vector_store(uri=str(tmp_path / "one"), encoder=HashEncoder(32), auto_optimize=None)
    vs = create_vector_store(uri=str(tmp_path / f"w{workers}"), encoder=HashEncoder(32), auto_optimize=None)
    options = {"collection": "kb", "chunk_size": 64, "chunk_overlap": 8, "batch_size": 7, "progress": False}
    baseline = ingest_sync(root, store=one, workers=1, **options)
    report = ingest_sync(root, store=vs, workers=workers, **options)
    assert report.files_written == baseline.files_written == 146
    assert [e.path for e in report.errors] == [e.path for e in baseline.errors]
    assert [e.path for e in report.errors] == sorted(str(p) for p in root.glob("*.txt"))
    got, want = stored(vs, "kb"), stored(one, "kb")
    assert got.keys() == want.keys() and all(got[i].document == want[i].document for i in got)


def test_a_worker_stops_its_slice_once_the_run_has_ended(tmp_path, store):
    """After a failure the threads still holding files to read stop instead of reading them."""
    import threading

    from turnkit.ingest._pipeline import _process_group, checked_settings
    from turnkit.ingest._walk import Candidate

    settings = checked_settings(store, 64, 8, "cl100k_base", None, (), "turnkit")
    files = [tmp_path / "a.md", tmp_path / "missing.md"]
    files[0].write_text("# A\n\nText.\n")
    group = [(Candidate(str(p), f"file://{p}", p.name, "markdown"), []) for p in files]
    stop = threading.Event()
    outcomes = _process_group(group, settings, stop)
    assert [o.status for o in outcomes] == ["write", "error"]
    stop.set()
    assert _process_group(group, settings, stop) == []


def test_a_window_is_cut_into_one_even_slice_per_worker():
    """Every worker gets files, even in a window shorter than the workers; order and files are kept."""
    from hypothesis import given
    from hypothesis import strategies as st

    from turnkit.ingest._pipeline import _slices

    @given(items=st.lists(st.integers(), max_size=80), parts=st.integers(1, 100))
    def check(items, parts):
        slices = _slices(items, parts)
        assert [x for s in slices for x in s] == items
        assert len(slices) == min(parts, len(items))
        assert all(slices) and max(map(len, slices), default=0) - min(map(len, slices), default=0) <= 1

    check()


def test_a_run_shorter_than_a_window_reads_its_files_on_every_worker(tmp_path, store, monkeypatch):
    """Four files, four workers: all four are read at once (a barrier only four threads can pass)."""
    import threading

    from turnkit.ingest import _pipeline

    for n in range(4):
        (tmp_path / f"f{n}.md").write_text(f"# File {n}\n\nSome text.\n")
    barrier, names, real = threading.Barrier(4, timeout=30), set(), _pipeline._process

    def process(candidate, stored, settings):
        names.add(threading.current_thread().name)
        barrier.wait()  # breaks (and fails the run) if fewer than four files are read at a time
        return real(candidate, stored, settings)

    monkeypatch.setattr(_pipeline, "_process", process)
    report = ingest_sync(tmp_path, store=store, collection="kb", workers=4, progress=False)
    assert report.files_written == 4 and len(names) == 4
    assert all(name.startswith("turnkit-ingest") for name in names)
