import numpy as np
import pytest

from turnkit.batteries.vector import AutoOptimize, create_vector_store


def _low_rank(n: int, dim: int, seed: int = 0) -> np.ndarray:
    # Low-rank plus noise: closer to real embeddings than i.i.d. Gaussians.
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(n, 8)) @ rng.normal(size=(8, dim)) + 0.3 * rng.normal(size=(n, dim))
    base = base.astype(np.float32)
    return base / np.linalg.norm(base, axis=1, keepdims=True)


def _recall(store, vectors: np.ndarray, queries: np.ndarray, k: int = 10) -> float:
    hits = 0
    for q in queries:
        truth = set(np.argsort(-(vectors @ q))[:k].astype(str))
        got = {m.id for m in store("v").near_vector(q).select("id").limit(k).search_sync()}
        hits += len(truth & got)
    return hits / (k * len(queries))


@pytest.mark.parametrize("index_type", ["auto", "hnsw_sq", "ivf_pq"])
def test_index_defaults_keep_recall(tmp_path, index_type):
    vectors = _low_rank(3000, 32)
    store = create_vector_store(uri=str(tmp_path), auto_optimize=None)
    store("v").upsert_sync([{"id": str(i), "vector": v} for i, v in enumerate(vectors)])
    params = {"num_sub_vectors": 8, "num_partitions": 4} if index_type == "ivf_pq" else {}
    built = store("v").create_index_sync(index_type, **params)
    assert built == ("ivf_flat" if index_type == "auto" else index_type)
    info = store.collection_info_sync("v")
    assert info.indexes and info.unindexed_rows == 0
    queries = _low_rank(30, 32, seed=1)
    assert _recall(store, vectors, queries) >= 0.95


def test_hnsw_defaults_hold_for_long_pages(tmp_path):
    """The default refine_factor is dropped, or ef raised, so LanceDB never sees ef < limit x refine."""
    vectors = _low_rank(3000, 32)
    store = create_vector_store(uri=str(tmp_path), auto_optimize=None)
    store("v").upsert_sync([{"id": str(i), "vector": v} for i, v in enumerate(vectors)])
    store("v").create_index_sync("hnsw_sq")
    q = store("v").near_vector(vectors[0]).select("id")
    assert len(q.limit(2500).search_sync()) == 2500  # ef capped below 2 x 2500: no refine
    assert len(q.limit(700).refine_factor(3).search_sync()) == 700  # ef raised to 2100
    assert q.limit(1).search_sync()[0].id == "0"


def test_auto_optimize_compacts_in_the_background(tmp_path):
    store = create_vector_store(
        uri=str(tmp_path), auto_optimize=AutoOptimize(every_writes=4, unindexed_rows=None)
    )
    rng = np.random.default_rng(0)
    for batch in range(3):
        store("v").upsert_sync([{"id": f"{batch}-{i}", "vector": rng.normal(size=4)} for i in range(5)])
    assert store.collection_info_sync("v").fragments == 3
    store("v").upsert_sync([{"id": "last", "vector": rng.normal(size=4)}])
    store.wait_for_maintenance_sync()
    info = store.collection_info_sync("v")
    assert info.fragments == 1 and info.rows == 16


def test_manual_optimize_folds_new_rows_into_the_index(tmp_path):
    vectors = _low_rank(600, 16)
    store = create_vector_store(uri=str(tmp_path), auto_optimize=None)
    store("v").upsert_sync([{"id": str(i), "vector": v} for i, v in enumerate(vectors[:500])])
    store("v").create_index_sync("ivf_flat", num_partitions=2)
    store("v").upsert_sync([{"id": str(i), "vector": v} for i, v in enumerate(vectors[500:], start=500)])
    assert store.collection_info_sync("v").unindexed_rows == 100
    store("v").optimize_sync()
    assert store.collection_info_sync("v").unindexed_rows == 0
