"""Duplicate collapse: one result per text, the copies kept on it, order and distinct texts untouched."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from turnkit.batteries.vector import VectorMatch, collapse_duplicates
from turnkit.batteries.vector.ranking._collapse import NEAR_COPY, _shingles, copy_words

PAGE = (
    "The process object provides information about, and control over, the current Node.js "
    "process. It is an instance of EventEmitter and emits the exit event when the process is "
    "about to exit because process.exit() was called explicitly."
)


def _m(id: str, text: str | None, **meta: object) -> VectorMatch:
    return VectorMatch(id=id, score=0.5, document=text, metadata=dict(meta))


def test_markdown_and_its_html_rendering_are_one_text() -> None:
    md = _m(
        "md", f"# Process\n\n{PAGE.replace('EventEmitter', '[EventEmitter](events.md#class-eventemitter)')}"
    )
    html = _m("html", f"Process# {PAGE}")
    other = _m("other", "Buffers hold raw binary data outside the V8 heap.")
    out = collapse_duplicates([md, other, html])
    assert [m.id for m in out] == ["md", "other"]
    assert [d.id for d in out[0].duplicates] == ["html"]


def test_a_chunk_inside_a_longer_page_is_a_copy() -> None:
    all_in_one = _m("all", "Buffer docs come first here. " + PAGE + " Then the path module follows.")
    part = _m("part", PAGE)
    assert [m.id for m in collapse_duplicates([all_in_one, part])] == ["all"]


def test_same_content_hash_is_a_copy_without_text() -> None:
    a, b = _m("a", None, content_hash="h1"), _m("b", None, content_hash="h1")
    c = _m("c", None, content_hash="h2")
    out = collapse_duplicates([a, b, c])
    assert [m.id for m in out] == ["a", "c"]
    assert out[0].duplicates == (b,)


def test_no_text_and_no_hash_is_never_a_copy() -> None:
    out = collapse_duplicates([_m("a", None), _m("b", None), _m("c", "")])
    assert [m.id for m in out] == ["a", "b", "c"]


def test_texts_that_share_a_little_stay_apart() -> None:
    a = _m("a", "Refunds reach the original card within five business days of the return.")
    b = _m("b", "Refunds reach the original card only after the warehouse has checked the parcel.")
    assert len(collapse_duplicates([a, b])) == 2


_words = st.lists(
    st.sampled_from("alpha beta gamma delta eps zeta eta theta iota kappa".split()), max_size=12
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_words, st.booleans()), max_size=12))
def test_collapse_keeps_order_and_loses_nothing(items) -> None:
    matches = [_m(str(i), " ".join(w) if has_text else None) for i, (w, has_text) in enumerate(items)]
    out = collapse_duplicates(matches)
    kept = [m.id for m in out]
    # The kept matches are in their original order, and every match is kept or hangs on one.
    assert kept == [m.id for m in matches if m.id in set(kept)]
    hung = [d.id for m in out for d in m.duplicates]
    assert sorted(kept + hung, key=int) == [m.id for m in matches]
    # Each copy comes after the match it hangs on.
    assert all(int(d.id) > int(m.id) for m in out for d in m.duplicates)
    # A text equal to an earlier one is never kept.
    seen: set[str] = set()
    for m in matches:
        words = " ".join((m.document or "").lower().split())
        if m.document and words and words in seen:
            assert m.id not in kept
        if m.id in kept and m.document:
            seen.add(words)
    # Collapsing again changes nothing.
    assert [m.id for m in collapse_duplicates(out)] == kept


def _reference_collapse(
    matches: list[VectorMatch], near_copy: float = NEAR_COPY
) -> list[tuple[str, list[str]]]:
    """The collapse rule written plainly: five-word runs as tuples of words, compared as sets."""

    kept: list[tuple[VectorMatch, frozenset[tuple[str, ...]], list[str]]] = []
    for match in matches:
        digest = (match.metadata or {}).get("content_hash")
        grams = _runs(copy_words(match.document) if match.document else [])
        for other, other_grams, copies in kept:
            small, large = sorted((grams, other_grams), key=len)
            near = bool(small) and len(small & large) >= near_copy * len(small)
            if (digest is not None and digest == (other.metadata or {}).get("content_hash")) or near:
                copies.append(match.id)
                break
        else:
            kept.append((match, grams, []))
    return [(m.id, copies) for m, _, copies in kept]


_vocab = st.sampled_from("the cat sat on a mat and then ran far away".split())


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.one_of(st.none(), st.lists(_vocab, max_size=24).map(" ".join)),
            st.one_of(st.none(), st.sampled_from(["h1", "h2"])),
        ),
        max_size=10,
    ),
    st.sampled_from([NEAR_COPY, 0.25, 1.0]),
)
def test_hashed_runs_decide_as_the_plain_rule(items, near_copy) -> None:
    """The hashed five-word runs give the same kept matches and copies as tuples of words."""
    matches = [
        _m(str(i), text, **({} if digest is None else {"content_hash": digest}))
        for i, (text, digest) in enumerate(items)
    ]
    out = collapse_duplicates(matches, near_copy=near_copy)
    assert [(m.id, [d.id for d in m.duplicates]) for m in out] == _reference_collapse(matches, near_copy)


def _runs(words: list[str]) -> frozenset[tuple[str, ...]]:
    if len(words) < 5:
        return frozenset([tuple(words)]) if words else frozenset()
    return frozenset(tuple(words[i : i + 5]) for i in range(len(words) - 4))


@settings(max_examples=300, deadline=None)
@given(st.lists(_vocab, max_size=30), st.lists(_vocab, max_size=30))
def test_hashed_runs_count_what_word_tuples_count(a, b) -> None:
    """No two distinct runs share a hash: the sets and their overlaps have the sizes of the tuple sets."""
    ha, hb = _shingles(a), _shingles(b)
    assert (len(ha), len(hb)) == (len(_runs(a)), len(_runs(b)))
    assert len(ha & hb) == len(_runs(a) & _runs(b))
