"""Kill an ingestion run with SIGKILL part-way; a second run must converge to a clean run's state.

Two ways to kill:

* the documented test hook ``_TURNKIT_INGEST_CRASH_AFTER_WRITES=N`` (armed only
  when ``_TURNKIT_INGEST_CRASH_PID`` is the process's own id) makes the process
  SIGKILL itself right after its N-th store commit (upsert, replace or delete),
  which reaches every between-commits state deterministically;
* an external ``kill -9`` sent while an upsert is in flight (the script's
  encoder announces each batch and then dawdles), which lands inside a write.
"""

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from turnkit.batteries.vector import HashEncoder, create_vector_store
from turnkit.ingest import ingest_sync

pytestmark = pytest.mark.skipif(os.name != "posix", reason="SIGKILL")

SETTINGS = {"chunk_size": 48, "chunk_overlap": 8, "batch_size": 8}

SCRIPT = textwrap.dedent(
    """
    import sys, time
    from turnkit.batteries.vector import HashEncoder, create_vector_store
    from turnkit.ingest import ingest_sync

    class SlowEncoder(HashEncoder):
        # Same vectors and name as HashEncoder(32); announces each batch, then gives the test
        # time to kill the process while that upsert is in flight.
        def encode(self, texts, *, kind):
            print("encoding", len(texts), flush=True)
            time.sleep(float(sys.argv[3]))
            return super().encode(texts, kind=kind)

    vs = create_vector_store(uri=sys.argv[1], encoder=SlowEncoder(32), auto_optimize=None)
    ingest_sync(sys.argv[2], store=vs, collection="docs", prune=True, progress=False,
                chunk_size=48, chunk_overlap=8, batch_size=8)
    print("done", flush=True)
    """
)


def write_corpus(root, version):
    """Version 1, then version 2: some files changed, one deleted, one added, the rest untouched."""

    def write(name, text):
        path = root / name
        if not path.exists() or path.read_text() != text:  # untouched files keep their mtime
            path.write_text(text)

    root.mkdir(exist_ok=True)
    body = " ".join(f"Line {i} of the handbook, version {version}." for i in range(60))
    write("big.md", f"# Handbook\n\n## Part\n\n{body}\n")  # spans several batches
    for i in range(8):
        stable = "Stable text that never changes. " * 10
        write(f"note{i}.txt", f"Note {i}. " + (stable if i % 2 else f"Edited v{version}. " * 12))
    write("same.md", "# Same\n\nThis file is identical in both versions.\n")
    if version == 1:
        write("removed.md", "# Removed\n\nOnly in version 1.\n" * 5)
    else:
        (root / "removed.md").unlink()
        write("added.md", "# Added\n\nOnly in version 2.\n" * 5)


def snapshot(uri):
    vs = create_vector_store(uri=uri, encoder=HashEncoder(32), auto_optimize=None)
    rows = vs("docs").select("id", "document", "metadata").limit(10_000).search_sync()
    assert vs("docs").count_sync() == len(rows) == len({r.id for r in rows})  # no duplicates
    return {r.id: (r.document, r.metadata) for r in rows}


def run_script(db, corpus, *, env=None, delay=0.0, kill_after_batches=None, arm=True):
    # `exec` keeps the shell's pid, so the hook's second variable can name the Python process.
    arming = "export _TURNKIT_INGEST_CRASH_PID=$$; " if arm else ""
    proc = subprocess.Popen(
        ["sh", "-c", arming + 'exec "$@"', "sh", sys.executable, "-c", SCRIPT, db, str(corpus), str(delay)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    if kill_after_batches is not None:
        seen = 0
        for line in proc.stdout:
            seen += line.startswith("encoding")
            if seen == kill_after_batches:
                os.kill(proc.pid, signal.SIGKILL)  # mid-upsert: the batch is being encoded
                break
    out, err = proc.communicate(timeout=120)
    return proc.returncode, err


def prepare(tmp_path):
    """A store holding version 1, and the corpus moved on to version 2."""
    corpus = tmp_path / "corpus"
    write_corpus(corpus, 1)
    db = str(tmp_path / "db")
    vs = create_vector_store(uri=db, encoder=HashEncoder(32), auto_optimize=None)
    first = ingest_sync(corpus, store=vs, collection="docs", progress=False, **SETTINGS)
    assert first.ok and first.chunks_written > 3 * SETTINGS["batch_size"]
    write_corpus(corpus, 2)
    return corpus, db


def resume_and_check(tmp_path, corpus, db):
    vs = create_vector_store(uri=db, encoder=HashEncoder(32), auto_optimize=None)
    report = ingest_sync(corpus, store=vs, collection="docs", prune=True, progress=False, **SETTINGS)
    assert report.ok
    # What one uninterrupted run over the same files gives in a fresh store.
    clean_db = str(tmp_path / "clean")
    clean = create_vector_store(uri=clean_db, encoder=HashEncoder(32), auto_optimize=None)
    ingest_sync(corpus, store=clean, collection="docs", progress=False, **SETTINGS)
    state, reference = snapshot(db), snapshot(clean_db)
    assert state.keys() == reference.keys()  # same ids: nothing missing, nothing extra
    assert state == reference  # same documents and metadata
    again = ingest_sync(corpus, store=vs, collection="docs", prune=True, progress=False, **SETTINGS)
    assert again.chunks_written == again.chunks_deleted == again.files_written == 0


# Ingesting version 2 over version 1 takes exactly this many commits (upserts, replaces of the
# small changed files, the big file's stale delete, the prune); test_every_commit_is_covered pins
# it, so the crash points below are all of them.
WRITES = 7


@pytest.mark.parametrize("crash_after", range(1, WRITES + 1))
def test_sigkill_after_each_commit_then_resume(tmp_path, crash_after):
    corpus, db = prepare(tmp_path)
    before = snapshot(db)
    code, err = run_script(db, corpus, env={"_TURNKIT_INGEST_CRASH_AFTER_WRITES": str(crash_after)})
    assert code == -signal.SIGKILL, err
    assert snapshot(db) != before  # the killed run did write something
    resume_and_check(tmp_path, corpus, db)


def test_every_commit_is_covered(tmp_path):
    corpus, db = prepare(tmp_path)
    code, err = run_script(db, corpus, env={"_TURNKIT_INGEST_CRASH_AFTER_WRITES": str(WRITES + 1)})
    assert code == 0, err  # the run finished: it made no more than WRITES commits
    resume_and_check(tmp_path, corpus, db)


@pytest.mark.parametrize("batches", [1, 3])
def test_external_kill_during_an_upsert_then_resume(tmp_path, batches):
    corpus, db = prepare(tmp_path)
    code, err = run_script(db, corpus, delay=0.3, kill_after_batches=batches)
    assert code == -signal.SIGKILL, err
    resume_and_check(tmp_path, corpus, db)


@pytest.mark.parametrize("pid", [None, "1", "not-a-pid"])
def test_the_crash_hook_is_inert_without_the_process_id(tmp_path, pid):
    # A crash count left in the environment (or inherited) must never kill a real run.
    corpus, db = prepare(tmp_path)
    env = {"_TURNKIT_INGEST_CRASH_AFTER_WRITES": "1"}
    if pid is not None:
        env["_TURNKIT_INGEST_CRASH_PID"] = pid
    code, err = run_script(db, corpus, env=env, arm=False)
    assert code == 0, err
    resume_and_check(tmp_path, corpus, db)
