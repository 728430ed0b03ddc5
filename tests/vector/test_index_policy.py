"""The index policy: what 'auto' builds and the search knobs it picks, as pure functions of the row count."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from turnkit.batteries.vector.store._index_policy import EXACT_ROWS, auto_index, default_ef, search_knobs


def test_auto_builds_exact_small_and_hnsw_large() -> None:
    assert auto_index(1_000) == ("ivf_flat", {"num_partitions": 1})
    assert auto_index(EXACT_ROWS)[0] == "ivf_flat"
    hnsw = {"m": 16, "ef_construction": 150}
    assert auto_index(100_000) == ("hnsw_sq", {"num_partitions": 1, **hnsw})
    assert auto_index(2_500_000) == ("hnsw_sq", {"num_partitions": 3, **hnsw})


def test_hnsw_knobs_follow_the_measured_points() -> None:
    # Measured with refine_factor 2 on the clustered bench data (docs/performance.md):
    # ef 1024 gives 0.976 at 100k, ef 1792 gives 0.977 at 300k (1536: 0.971, 1024: 0.928).
    assert search_knobs("IvfHnswSq", 60_000, 10, None, None, None) == (None, 2, 1024)
    assert search_knobs("IvfHnswSq", 100_000, 10, None, None, None) == (None, 2, 1024)
    assert search_knobs("IvfHnswSq", 300_000, 10, None, None, None) == (None, 2, 1792)
    assert default_ef(1_000_000, 10) > 1792


@given(st.integers(0, 50_000_000), st.integers(0, 50_000_000), st.integers(1, 10_000))
def test_ef_grows_with_rows_and_covers_the_page(a: int, b: int, wanted: int) -> None:
    small, large = sorted((a, b))
    assert default_ef(small, wanted) <= default_ef(large, wanted)
    assert default_ef(large, wanted) >= min(2 * wanted, 8_192)


@given(
    st.integers(0, 5_000_000),
    st.integers(1, 10_000),
    st.one_of(st.none(), st.integers(1, 20)),
    st.one_of(st.none(), st.integers(1, 5_000)),
)
def test_hnsw_knobs_never_ask_lancedb_for_fewer_candidates_than_refined(
    rows: int, wanted: int, refine: int | None, ef: int | None
) -> None:
    """LanceDB rejects ef < limit x refine_factor: a default never creates that, only explicit values can."""
    _, got_refine, got_ef = search_knobs("IvfHnswSq", rows, wanted, None, refine, ef)
    assert got_ef is not None
    if refine is None or ef is None:  # at least one of them is turnkit's choice
        assert got_refine is None or got_ef >= got_refine * wanted


@given(
    st.sampled_from([None, "IvfHnswSq", "IvfPq", "IvfFlat"]),
    st.integers(0, 5_000_000),
    st.one_of(st.none(), st.integers(1, 100)),
    st.one_of(st.none(), st.integers(1, 100)),
    st.one_of(st.none(), st.integers(1, 100)),
)
def test_explicit_knobs_always_win(
    index: str | None, rows: int, nprobes: int | None, refine: int | None, ef: int | None
) -> None:
    got = search_knobs(index, rows, 10, nprobes, refine, ef)
    for given_value, chosen in zip((nprobes, refine, ef), got, strict=True):
        if given_value is not None:
            assert chosen == given_value
    if index is None:
        assert got == (nprobes, refine, ef)


def test_small_flat_index_probes_every_partition() -> None:
    rows = 40_000
    partitions = auto_index(rows)[1]["num_partitions"]
    assert search_knobs("IvfFlat", rows, 10, None, None, None) == (partitions, None, None)
    assert search_knobs("IvfPq", rows, 10, None, None, None)[1] == 10


def test_hnsw_sq_reranks_by_full_vectors() -> None:
    # Quantized distances alone capped filtered recall@10 near 0.95 (bench/filters.py).
    assert search_knobs("IvfHnswSq", 100_000, 10, None, None, None)[1] == 2
