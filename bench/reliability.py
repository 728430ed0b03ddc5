"""Reliability scenarios: one line each with its figure and PASS/FAIL.

    python bench/reliability.py                # small defaults, a few minutes
    python bench/reliability.py --rounds 20

Scenarios: concurrent threads and processes writing overlapping ids (rows,
duplicates, lost writes, errors), kill -9 of a process in the middle of
upserts (the collection still opens and holds only whole batches), hostile
filters (random filter trees and ``where_raw`` bindings: only turnkit errors,
no row outside the filter), guard races (two tenants writing the same ids),
and big or malformed inputs (a document over the cap, metadata nested 5,000
deep, special files in an ingest tree).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from _common import peak_rss_mb

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests._writers import expected_ids, guarded_writer, table_ids, turnkit_writer

Result = tuple[bool, str]


def _counted(uri: str, workers: int, rounds: int, shared: int, errors: int) -> Result:
    ids = table_ids(uri, None, "c")
    counts = Counter(ids)
    lost = len(expected_ids(workers, rounds, shared) - set(counts))
    duplicates = sum(n - 1 for n in counts.values())
    figure = f"rows={len(ids)} duplicates={duplicates} lost={lost} errors={errors}"
    return duplicates == 0 and lost == 0 and errors == 0, figure


def threads(tmp: str, rounds: int) -> Result:
    uri, workers, shared = f"{tmp}/threads", 4, 3
    errors: list[int] = []
    pool = [
        threading.Thread(target=lambda w=w: errors.append(turnkit_writer(uri, None, "c", w, rounds, shared)))
        for w in range(workers)
    ]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return _counted(uri, workers, rounds, shared, sum(errors))


def processes(tmp: str, rounds: int) -> Result:
    uri, workers, shared = f"{tmp}/processes", 4, 3
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        errors = sum(
            pool.submit(turnkit_writer, uri, None, "c", w, rounds, shared).result() for w in range(workers)
        )
    return _counted(uri, workers, rounds, shared, errors)


_UPSERT_LOOP = """
import sys
import numpy as np
from turnkit.batteries.vector import create_vector_store
vs = create_vector_store(sys.argv[1], auto_optimize=None)
batch = 0
while True:
    ids = [f"b{batch}-{i}" for i in range(50)]
    vs("c").upsert_sync([{"id": i, "vector": np.ones(8) + batch, "metadata": {"batch": batch}} for i in ids])
    print(batch, flush=True)
    batch += 1
"""


def kill_upsert(tmp: str, rounds: int) -> Result:
    uri = f"{tmp}/killed"
    child = subprocess.Popen([sys.executable, "-c", _UPSERT_LOOP, uri], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    for _ in range(max(3, rounds // 2)):
        child.stdout.readline()
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    from turnkit.batteries.vector import create_vector_store

    rows = (
        create_vector_store(uri, auto_optimize=None)("c").select("id", "metadata").limit(10_000).search_sync()
    )
    per_batch = Counter(m.metadata["batch"] for m in rows)
    partial = sum(1 for n in per_batch.values() if n != 50)
    ids = [m.id for m in rows]
    duplicates = len(ids) - len(set(ids))
    return (
        partial == 0 and duplicates == 0,
        f"rows={len(ids)} partial_batches={partial} duplicates={duplicates}",
    )


def hostile_filters(tmp: str, rounds: int) -> Result:
    from turnkit import TurnkitError
    from turnkit.batteries.vector import create_vector_store

    vs = create_vector_store(f"{tmp}/filters", auto_optimize=None)
    vs("c").upsert_sync(
        [{"id": f"r{i}", "vector": [1.0, float(i)], "metadata": {"n": i, "t": f"x{i}"}} for i in range(20)]
    )
    rng = random.Random(5)
    nasty = ["'", "\\", "' OR 1=1 --", "%", "_", "\x00", "é", "1e309", ")", "metadata.n", "NULL", "*"]
    turnkit_errors = other = outside = 0
    for _ in range(rounds * 20):
        value = rng.choice([*nasty, rng.randint(-5, 25), rng.random(), None, [1, "a"], {"$gt": 3}])
        op = rng.choice(["$eq", "$ne", "$gt", "$in", "$like", "$bogus", "$and"])
        field = rng.choice(["metadata.n", "metadata.t", "id", "metadata.'", "document", "vector", "x;drop"])
        try:
            if rng.random() < 0.3:
                query = vs("c").where_raw(
                    rng.choice(["metadata.n > ?", "id = ?", "?", "metadata.t LIKE ?"]), value
                )
            else:
                query = vs("c").where({field: {op: value}})
            found = query.select("id", "metadata").search_sync()
            if op == "$eq" and field == "metadata.n" and isinstance(value, int):
                outside += sum(1 for m in found if m.metadata["n"] != value)
        except TurnkitError:
            turnkit_errors += 1
        except Exception:
            other += 1
    figure = (
        f"queries={rounds * 20} turnkit_errors={turnkit_errors} other_errors={other} rows_outside={outside}"
    )
    return other == 0 and outside == 0, figure


def guard_race(tmp: str, rounds: int) -> Result:
    uri, ids = f"{tmp}/guard", [f"g{i}" for i in range(5)]
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [
            pool.submit(guarded_writer, uri, "c", tenant, rounds, ids) for tenant in ("acme", "globex")
        ]
        errors = sum(f.result() for f in futures)
    from turnkit.batteries.vector import condition, create_vector_store

    store = create_vector_store(uri, auto_optimize=None)
    # Each tenant holds its own record under every id, and sees only its own.
    seen = {
        t: store("c").where(condition("metadata.tenant", "eq", t)).get_sync(ids) for t in ("acme", "globex")
    }
    foreign = sum(1 for t, ms in seen.items() for m in ms if (m.metadata or {}).get("tenant") != t)
    rows = len(table_ids(uri, None, "c"))
    ok = rows == 2 * len(ids) and all(len(ms) == len(ids) for ms in seen.values()) and foreign == errors == 0
    per_tenant = [len(ms) for ms in seen.values()]
    return ok, f"rows={rows} per_tenant={per_tenant} cross_tenant={foreign} errors={errors}"


def big_inputs(tmp: str, rounds: int) -> Result:
    from turnkit import TurnkitError
    from turnkit.batteries.vector import HashEncoder, create_vector_store

    vs = create_vector_store(
        f"{tmp}/big", encoder=HashEncoder(16), auto_optimize=None, max_document_chars=1_000_000
    )
    vs("c").upsert_sync([{"id": "seed", "document": "seed"}])
    deep: list[object] = []
    for _ in range(5000):
        deep = [deep]
    cases = {
        "oversized document": [{"id": "big", "document": "a " * 600_000}],
        "metadata 5,000 deep": [{"id": "deep", "vector": [1.0] * 16, "metadata": {"d": deep}}],
        "boolean vector": [{"id": "bool", "vector": [True] * 16}],
    }
    refused = 0
    for records in cases.values():
        try:
            vs("c").upsert_sync(records)
        except TurnkitError:
            refused += 1
    rows = vs("c").count_sync()
    return refused == len(
        cases
    ) and rows == 1, f"refused={refused}/{len(cases)} rows={rows} rss_mb={peak_rss_mb():.0f}"


def special_files(tmp: str, rounds: int) -> Result:
    tree = Path(tmp) / "tree"
    tree.mkdir()
    (tree / "ok.md").write_text("# Title\n\nRefunds take five days.\n")
    os.mkfifo(tree / "pipe.md")
    (tree / "zero.md").symlink_to("/dev/zero")
    (tree / "huge.md").write_text("word " * 500_000)
    start = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "turnkit.cli",
            "ingest",
            str(tree),
            "--uri",
            f"{tmp}/ingested",
            "--encoder",
            "hash:16",
            "--collection",
            "docs",
            "--max-file-size",
            "1MB",
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    seconds = time.monotonic() - start
    from turnkit.batteries.vector import create_vector_store

    try:
        sources = {
            (m.metadata or {}).get("source_display_name")
            for m in create_vector_store(f"{tmp}/ingested")("docs")
            .select("metadata")
            .limit(10_000)
            .search_sync()
        }
    except Exception as exc:
        sources = {f"unreadable: {type(exc).__name__}"}
    # Only the regular file is ingested; the FIFO, the /dev/zero link and the oversized file are skipped.
    ok = done.returncode in (0, 3) and sources == {"ok.md"}
    return ok, f"exit={done.returncode} files_ingested={sorted(map(str, sources))} seconds={seconds:.0f}"


def kill_ingest(tmp: str, rounds: int) -> Result:
    """SIGKILL ``turnkit ingest`` right after its 2nd commit (the documented hook), then rerun it."""
    root = Path(tmp) / "tree"
    root.mkdir()
    for i in range(12):
        (root / f"doc{i}.md").write_text(
            f"# Doc {i}\n\n" + " ".join(f"word{i}-{j}" for j in range(400)) + "\n"
        )
    uri = f"{tmp}/ingested"
    args = [sys.executable, "-m", "turnkit.cli", "ingest", str(root), "--uri", uri, "--encoder", "hash:32"]
    args += ["--batch-size", "4", "--no-progress"]
    script = (
        "import os, sys, runpy; "
        "os.environ['_TURNKIT_INGEST_CRASH_AFTER_WRITES'] = '2'; "
        "os.environ['_TURNKIT_INGEST_CRASH_PID'] = str(os.getpid()); "
        "sys.argv = ['turnkit'] + sys.argv[1:]; runpy.run_module('turnkit.cli', run_name='__main__')"
    )
    killed = subprocess.run([sys.executable, "-c", script, *args[3:]], capture_output=True, timeout=120)
    rerun = subprocess.run(args, capture_output=True, timeout=120)
    from turnkit.batteries.vector import create_vector_store

    rows = create_vector_store(uri, auto_optimize=None)("docs").select("id", "metadata").limit(10_000)
    found = rows.search_sync()
    ids = [m.id for m in found]
    files = {(m.metadata or {}).get("source_display_name") for m in found}
    ok = killed.returncode == -signal.SIGKILL and rerun.returncode == 0
    ok = ok and len(ids) == len(set(ids)) and files == {f"doc{i}.md" for i in range(12)}
    return ok, (
        f"killed_exit={killed.returncode} rerun_exit={rerun.returncode} rows={len(ids)} "
        f"duplicates={len(ids) - len(set(ids))} files={len(files)}/12"
    )


def http_flood(tmp: str, rounds: int) -> Result:
    """200 unclosed initialize calls with a token, 50 without, then a client with the token still works."""
    import json
    import socket
    import urllib.error
    import urllib.request

    from turnkit.batteries.vector import HashEncoder, create_vector_store

    uri = f"{tmp}/served"
    create_vector_store(uri, encoder=HashEncoder(16), auto_optimize=None)("kb").upsert_sync(
        [{"id": "a", "document": "orders ship from Lyon"}]
    )
    token = "reliability-token-0123456789"
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "turnkit.mcp", "--uri", uri, "--transport", "http", "--port", str(port)],
        env={**os.environ, "TURNKIT_MCP_TOKEN": token},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "b", "version": "1"},
        },
    }

    def post(auth: bool) -> int:
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if auth:
            headers["Authorization"] = f"Bearer {token}"
        request = urllib.request.Request(url, json.dumps(init).encode(), headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return int(response.status)
        except urllib.error.HTTPError as exc:
            return int(exc.code)

    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    return False, "server did not start"
                time.sleep(0.05)
        with_token = Counter(post(True) for _ in range(200))
        without = Counter(post(False) for _ in range(50))
        after = post(True)
    finally:
        server.terminate()
        server.wait(10)
    ok = set(with_token) == {200} and set(without) == {401} and after == 200
    return ok, f"flood_200={dict(with_token)} no_token_50={dict(without)} then_token_client={after}"


SCENARIOS: dict[str, Callable[[str, int], Result]] = {
    "threads": threads,
    "processes": processes,
    "kill -9 during upsert": kill_upsert,
    "hostile filters": hostile_filters,
    "guard race": guard_race,
    "big inputs": big_inputs,
    "special files in ingest": special_files,
    "kill -9 during ingest": kill_ingest,
    "HTTP flood": http_flood,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--only", nargs="*", default=list(SCENARIOS))
    args = parser.parse_args()
    failed = 0
    for name in args.only:
        with tempfile.TemporaryDirectory(prefix="turnkit-reliability-") as tmp:
            try:
                ok, figure = SCENARIOS[name](tmp, args.rounds)
            except Exception as exc:
                ok, figure = False, f"crashed: {exc!r}"[:300]
        failed += not ok
        print(f"{'PASS' if ok else 'FAIL'}  {name:<26} {figure}", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
