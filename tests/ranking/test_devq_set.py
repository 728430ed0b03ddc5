"""bench/quality.py's developer-question set: its files agree; its duplicate measure finds copies."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

from _devq import TYPES, Chunk, duplicate_pairs, load_questions, same_text  # noqa: E402
from devq_corpus import PAGES_FILE, SOURCES, page_key  # noqa: E402


@pytest.fixture(scope="module")
def manifest() -> dict:
    return json.loads(PAGES_FILE.read_text())


def test_questions_are_labelled_with_pages_of_the_corpus(manifest) -> None:
    questions = load_questions()
    assert 50 <= len(questions) <= 80
    assert len({q.id for q in questions}) == len(questions)
    assert len({q.text.lower() for q in questions}) == len(questions)
    assert set(Counter(q.type for q in questions)) == set(TYPES)
    for q in questions:
        assert q.text.strip() and q.pages, q.id
        missing = q.pages - set(manifest["pages"])
        assert not missing, f"{q.id}: {sorted(missing)} is no page of the corpus"


def test_the_manifest_names_the_pinned_packages_and_its_own_pages(manifest) -> None:
    assert manifest["packages"] == {s.name: s.version for s in SOURCES}
    assert manifest["files"] == sum(len(files) for files in manifest["pages"].values())
    for key, files in manifest["pages"].items():
        assert {page_key(f) for f in files} == {key}
    # the point of the corpus: pages that ship as reST source and as their HTML rendering
    assert sum(len(files) == 2 for files in manifest["pages"].values()) >= 150


def test_a_pages_source_and_its_rendering_are_one_page() -> None:
    pg = "pygame-2.6.1/pygame/docs/generated"
    assert (
        page_key(f"{pg}/_sources/ref/mixer.rst.txt") == page_key(f"{pg}/ref/mixer.html") == "pygame:ref/mixer"
    )
    sa = "sqlalchemy-1.4.54/doc"
    assert page_key(f"{sa}/build/orm/session_basics.rst") == page_key(f"{sa}/orm/session_basics.html")
    assert page_key(f"{sa}/orm/session_basics.html") != page_key(f"{sa}/orm/session_api.html")
    assert page_key("numpy-2.0/README.md") is None


SOURCE = """Sound.fadeout(time) -> None
   This will stop playback of the sound after fading it out over the time argument in milliseconds.
   The Sound will fade and stop on all actively playing channels."""
RENDERED = """pygame.mixer.Sound.fadeout()
stop sound playback after fading out
fadeout(time) -> None
This will stop playback of the sound after fading it out over the time argument in milliseconds.
The Sound will fade and stop on all actively playing channels. Changed in pygame 2.0.0."""
OTHER = """pygame.mixer.Sound.play()
begin sound playback
Begin playback of the Sound (i.e., on the computer's speakers) on an available Channel. This will
forcibly select a Channel, so playback may cut off a currently playing sound if necessary."""


def test_same_text_is_a_near_copy_not_a_shared_topic() -> None:
    src, html, other = (
        Chunk("a", "x.rst", "p", SOURCE),
        Chunk("b", "x.html", "p", RENDERED),
        Chunk("c", "y", "q", OTHER),
    )
    assert same_text(src, html) and same_text(html, src)
    assert not same_text(src, other)
    assert same_text(
        Chunk("d", "z", "r", "  The SAME text, twice! "), Chunk("e", "w", "r", "the same text twice")
    )


def test_duplicates_count_only_copies_from_different_files_in_the_first_three() -> None:
    chunks = {
        "a": Chunk("a", "x.rst", "p", SOURCE),
        "b": Chunk("b", "x.html", "p", RENDERED),
        "c": Chunk("c", "y.html", "q", OTHER),
        "a2": Chunk("a2", "x.rst", "p", SOURCE),
        "d": Chunk(
            "d", "z.html", "s", "Session.merge copies the state of an object into a persistent instance."
        ),
    }
    assert [(x.id, y.id) for x, y in duplicate_pairs(["a", "c", "b"], chunks)] == [("a", "b")]
    assert duplicate_pairs(["a", "c", "d", "b"], chunks) == []  # the copy is fourth
    assert duplicate_pairs(["a", "a2", "c"], chunks) == []  # one file's own chunks
