from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from turnkit._tokens import get_encoding
from turnkit.batteries.vector import PageSpan
from turnkit.ingest import (
    Chunk,
    IngestUsageError,
    LoadedDocument,
    Section,
    chunk_document,
    load_document,
    split_text,
)

ENC = get_encoding("cl100k_base")
WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def make_doc(sections, kind="text", uri="file:///tmp/doc.txt"):
    return LoadedDocument(
        source_uri=uri,
        display_name=uri.rsplit("/", 1)[-1],
        kind=kind,
        sections=tuple(sections),
        mtime=WHEN,
        content_hash="f" * 64,
    )


def text_doc(text):
    return make_doc([Section(text=text)] if text else [])


def token_boundaries(text):
    """Character offsets of the token boundaries of ``text`` that fall between characters."""
    data = text.encode()
    offsets, pos = {0}, 0
    for token in ENC.decode_tokens_bytes(ENC.encode_ordinary(text)):
        pos += len(token)
        if pos == len(data) or (data[pos] & 0xC0) != 0x80:
            offsets.add(len(data[:pos].decode()))
    return offsets


def check_chunks(text, chunks, chunk_size, chunk_overlap):
    boundaries = token_boundaries(text)
    cursor, rebuilt = 0, []
    for i, chunk in enumerate(chunks):
        assert chunk.index == i and chunk.count == len(chunks)
        assert chunk.text and chunk.text == text[chunk.start : chunk.end].strip()
        # cut only at token boundaries, never inside a UTF-8 sequence
        assert chunk.start in boundaries and chunk.end in boundaries
        data = ENC.decode_bytes(ENC.encode(chunk.text, disallowed_special=()))
        assert data.decode("utf-8") == chunk.text  # strict: decodes cleanly
        assert chunk.token_count == len(ENC.encode_ordinary(chunk.text)) <= chunk_size
        if i:
            prev = chunks[i - 1]
            assert prev.start < chunk.start  # progress
            # No gap but whitespace: a window that held only whitespace made no chunk.
            assert not text[prev.end : chunk.start].strip()
            if chunk_overlap == 0:
                assert chunk.start >= prev.end
            else:
                overlap = text[chunk.start : prev.end]
                assert len(ENC.encode_ordinary(overlap)) <= chunk_overlap + 2
        gap = text[cursor : chunk.start]
        assert not gap.strip()
        rebuilt.append(text[cursor : max(cursor, chunk.end)])
        cursor = max(cursor, chunk.end)
    rebuilt.append(text[cursor:])
    assert "".join(rebuilt) == text  # the non-overlapping parts reproduce the text
    assert not text[cursor:].strip()


ALPHABET = st.sampled_from(
    list("abcdefghij KLMN  .,!?;:'\"()\n\t-0123456789")
    + list("éüßñøçå")
    + list("世界你好中文字。！？、")
    + ["😀", "🎉", "🚀", "🧠", "€", "—", "…", "\u00a0"]
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.text(ALPHABET, max_size=600),
    chunk_size=st.integers(min_value=6, max_value=80),
    overlap_ratio=st.floats(min_value=0, max_value=0.9),
)
def test_chunks_cut_on_token_boundaries_and_reproduce_the_text(text, chunk_size, overlap_ratio):
    chunk_overlap = min(int(chunk_size * overlap_ratio), chunk_size - 1)
    chunks = chunk_document(text_doc(text), chunk_size=chunk_size, chunk_overlap=chunk_overlap)
    check_chunks(text, chunks, chunk_size, chunk_overlap)
    assert bool(chunks) == bool(text.strip())
    again = chunk_document(text_doc(text), chunk_size=chunk_size, chunk_overlap=chunk_overlap)
    assert [c.id for c in again] == [c.id for c in chunks]  # deterministic


@settings(max_examples=60, deadline=None)
@given(
    words=st.lists(st.sampled_from(["alpha", "beta", "γάμμα", "δέλτα", "数据", "🙂", "x"]), max_size=400),
    chunk_size=st.integers(min_value=1, max_value=40),
)
def test_tiny_chunk_sizes_and_no_overlap(words, chunk_size):
    text = " ".join(words)
    chunks = chunk_document(text_doc(text), chunk_size=chunk_size, chunk_overlap=0)
    boundaries = token_boundaries(text)
    assert "".join(text[c.start : c.end] for c in chunks).strip() == text.strip()
    for c in chunks:
        assert c.start in boundaries and c.end in boundaries
        # only a character that alone needs more tokens than chunk_size may exceed it
        assert c.token_count <= chunk_size or len(c.text) == 1


def test_grapheme_clusters_are_never_split():
    family = "👨\u200d👩\u200d👧\u200d👦"
    text = f"{family} 🇫🇷🇯🇵 e\u0301te\u0301 {family}"
    for size in range(1, 8):
        for chunk in chunk_document(text_doc(text), chunk_size=size, chunk_overlap=0):
            assert chunk.text[0] not in "\u200d\u0301" and chunk.text[-1] != "\u200d"
            assert family in chunk.text or "\u200d" not in chunk.text
            flags = [c for c in chunk.text if 0x1F1E6 <= ord(c) <= 0x1F1FF]
            assert len(flags) % 2 == 0


def test_defaults_match_vertex_and_long_text_respects_them():
    sentence = "The quick brown fox jumps over the lazy dog near the river bank. "
    paragraphs = "\n\n".join(sentence * 12 for _ in range(40))
    chunks = chunk_document(text_doc(paragraphs))
    assert len(chunks) > 3
    check_chunks(paragraphs, chunks, 1024, 200)
    assert all(c.token_count <= 1024 for c in chunks)
    assert all(c.token_count > 512 for c in chunks[:-1])  # packing fills at least half a window


def test_prefers_paragraph_then_sentence_boundaries():
    para = "One two three four five six seven. Eight nine ten eleven twelve thirteen."
    text = "\n\n".join([para] * 6)
    chunks = chunk_document(text_doc(text), chunk_size=40, chunk_overlap=0)
    assert all(c.text.endswith("thirteen.") for c in chunks)  # whole paragraphs
    no_paragraphs = " ".join([para] * 6)
    chunks = chunk_document(text_doc(no_paragraphs), chunk_size=20, chunk_overlap=0)
    assert all(c.text.endswith(".") for c in chunks)  # whole sentences


def test_overlap_starts_at_a_sentence():
    text = " ".join(f"Sentence number {i} says something." for i in range(60))
    chunks = chunk_document(text_doc(text), chunk_size=50, chunk_overlap=20)
    for prev, chunk in zip(chunks, chunks[1:], strict=False):
        assert chunk.start < prev.end
        assert chunk.text.startswith("Sentence number")
        assert len(ENC.encode_ordinary(text[chunk.start : prev.end])) <= 20


def test_markdown_chunks_stay_in_sections_and_carry_heading_paths(tmp_path):
    body = "Install the package with pip and check the version it reports. " * 30
    md = f"# Guide\n## Install\n\n{body}\n\n## Use\n\nShort usage note.\n\n### Deep\n\nDeep note.\n"
    path = tmp_path / "guide.md"
    path.write_text(md)
    doc = load_document(path)
    chunks = chunk_document(doc, chunk_size=120, chunk_overlap=20)
    by_path = {}
    for c in chunks:
        by_path.setdefault(c.heading_path, []).append(c)
    assert list(by_path) == [("Guide", "Install"), ("Guide", "Use"), ("Guide", "Use", "Deep")]
    assert chunks[0].text.startswith("# Guide\n## Install")  # the bare title travels with its subsection
    assert len(by_path[("Guide", "Install")]) > 1
    assert by_path[("Guide", "Use")][0].text == "## Use\n\nShort usage note."
    meta = chunks[0].metadata
    assert meta["heading_path"] == ["Guide", "Install"]
    assert meta["section"] == "Guide > Install"
    assert "page_span" not in meta
    # no chunk reaches into the next section
    assert not any("## Use" in c.text for c in by_path[("Guide", "Install")])
    assert not any("Deep note" in c.text for c in by_path[("Guide", "Use")])


def test_pdf_page_spans(tmp_path, make_pdf):
    line = "Lorem ipsum dolor sit amet, consectetur adipiscing elit."
    path = make_pdf(tmp_path / "book.pdf", [[f"Page {n}: {line}"] * 4 for n in range(1, 6)])
    doc = load_document(path)
    chunks = chunk_document(doc, chunk_size=60, chunk_overlap=10)
    assert chunks
    spans = [c.page_span for c in chunks]
    assert all(isinstance(s, PageSpan) for s in spans)
    assert spans[0].first_page == 1 and spans[-1].last_page == 5
    assert any(s.first_page < s.last_page for s in spans)  # some chunk crosses a page break
    for c in chunks:
        pages = {int(p.split(":")[0]) for p in c.text.split("Page ")[1:] if p[:1].isdigit()}
        assert pages <= set(range(c.page_span.first_page, c.page_span.last_page + 1))
        assert c.metadata["page_span"] == c.page_span.to_dict()
    one = chunk_document(doc)
    assert len(one) == 1 and one[0].page_span == PageSpan(first_page=1, last_page=5)


def test_chunk_ids_and_metadata(tmp_path):
    doc = text_doc("alpha beta. " * 200)
    chunks = chunk_document(doc, chunk_size=50, chunk_overlap=10)
    assert len({c.id for c in chunks}) == len(chunks)
    assert all(len(c.id) == 32 for c in chunks)
    other = chunk_document(
        make_doc(doc.sections, uri="file:///tmp/other.txt"), chunk_size=50, chunk_overlap=10
    )
    assert not {c.id for c in chunks} & {c.id for c in other}  # the source is part of the id
    meta = chunks[1].metadata
    assert meta == {
        "source_uri": "file:///tmp/doc.txt",
        "source_display_name": "doc.txt",
        "kind": "text",
        "mtime": "2026-01-02T03:04:05+00:00",
        "file_hash": "f" * 64,
        "content_hash": chunks[1].content_hash,
        "chunk_index": 1,
        "chunk_count": len(chunks),
        "token_count": chunks[1].token_count,
        "char_start": chunks[1].start,
        "char_end": chunks[1].end,
        "ingest_fingerprint": chunks[1].fingerprint,
    }
    assert chunks[1].to_record() == {"id": chunks[1].id, "document": chunks[1].text, "metadata": meta}
    assert isinstance(chunks[0], Chunk)
    assert len({c.fingerprint for c in chunks}) == 1
    changed = chunk_document(doc, chunk_size=60, chunk_overlap=10)
    assert changed[0].fingerprint != chunks[0].fingerprint  # settings are part of the fingerprint


@pytest.mark.parametrize(
    ("size", "overlap", "encoding"),
    [
        (0, 0, "cl100k_base"),
        (10, 10, "cl100k_base"),
        (10, -1, "cl100k_base"),
        (True, 0, "cl100k_base"),
        (10.5, 0, "cl100k_base"),
        (10, 2, "gpt2"),
    ],
)
def test_invalid_settings(size, overlap, encoding):
    with pytest.raises(IngestUsageError) as info:
        chunk_document(text_doc("x"), chunk_size=size, chunk_overlap=overlap, encoding=encoding)
    assert info.value.code == "E_INGEST_INVALID_CHUNKING"


def test_empty_and_whitespace_documents():
    assert chunk_document(text_doc("")) == []
    assert chunk_document(text_doc(" \n\n\t ")) == []


def test_split_text_and_o200k():
    pieces = split_text("Hello there. " * 100, chunk_size=30, chunk_overlap=5, encoding="o200k_base")
    o200k = get_encoding("o200k_base")
    assert len(pieces) > 1
    assert all(len(o200k.encode_ordinary(p)) <= 30 for p in pieces)


MULTIBYTE = st.sampled_from(list("世界你好中文字。！？、éüßñ€—…") + ["😀", "🎉", "🚀", "🧠", "𝔘", "𝔫", "\n"])


@settings(max_examples=150, deadline=None)
@given(
    text=st.text(MULTIBYTE, min_size=1, max_size=300),
    chunk_size=st.integers(min_value=4, max_value=30),
    data=st.data(),
)
def test_text_without_spaces_is_cut_between_characters(text, chunk_size, data):
    # Emoji and CJK are often several tokens per character: here most token
    # boundaries fall inside a UTF-8 sequence and must be stepped over.
    chunk_overlap = data.draw(st.integers(min_value=0, max_value=chunk_size - 1))
    chunks = chunk_document(text_doc(text), chunk_size=chunk_size, chunk_overlap=chunk_overlap)
    check_chunks(text, chunks, chunk_size, chunk_overlap)


def test_a_window_of_whitespace_between_two_chunks_makes_no_chunk():
    # "𝔘" is three tokens and "\n" one: after the first chunk, the window up to the next clean
    # boundary holds only the newline, so the next chunk starts after it.
    text = "ß𝔘\nß𝔘"
    chunks = chunk_document(text_doc(text), chunk_size=4, chunk_overlap=2)
    check_chunks(text, chunks, 4, 2)
    assert [(c.start, c.end, c.text) for c in chunks] == [(0, 2, "ß𝔘"), (3, 5, "ß𝔘")]


def test_stripped_text_is_recounted():
    # " 😀" is one token but "😀" alone is two: the stored (stripped) text is
    # re-counted and cut earlier when it would exceed chunk_size.
    text = " 😀—g"
    assert len(ENC.encode_ordinary(text)) == 3
    assert len(ENC.encode_ordinary(text.strip())) == 4
    chunks = chunk_document(text_doc(text), chunk_size=3, chunk_overlap=0)
    check_chunks(text, chunks, 3, 0)
    assert len(chunks) == 2


def test_setext_title_without_body_joins_the_next_section(tmp_path):
    path = tmp_path / "setext.md"
    path.write_text("Title\n=====\n\nSub\n---\n\nBody text.\n")
    chunks = chunk_document(load_document(path))
    assert [(c.heading_path, c.text) for c in chunks] == [
        (("Title", "Sub"), "Title\n=====\n\nSub\n---\n\nBody text.")
    ]
