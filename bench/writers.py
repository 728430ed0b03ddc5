"""Many writer processes on one database: duplicates and lost writes, turnkit against raw LanceDB.

N spawned processes each make M upserts; in every round all of them write the
same new ids (plus one id of their own). Printed per storage and N: rows,
distinct ids, duplicate rows, lost ids, failed calls and seconds, for turnkit
and for LanceDB's own ``merge_insert`` in the same run. Object storage is
moto's S3-compatible server on loopback (``pip install 'turnkit[s3-test]'``);
it is skipped when moto is absent.

A second table lines the N processes up on a new collection ``--creates``
times: each creates it (they all find it missing) and writes one id of its
own at the same moment; it counts the trials that lost rows, the rows lost
and the failed calls.

    python bench/writers.py [--workers 4 8] [--rounds 10] [--shared 5] [--creates 10] [--no-s3]
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from _common import table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests._s3 import moto_available, s3_server
from tests._writers import expected_ids, raw_writer, table_ids, turnkit_writer


def _trial(
    writer: Any, uri: str, options: dict[str, str] | None, workers: int, rounds: int, shared: int
) -> tuple[str, ...]:
    start = time.perf_counter()
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(writer, uri, options, "c", w, rounds, shared) for w in range(workers)]
        errors = sum(f.result() for f in futures)
    seconds = time.perf_counter() - start
    ids = table_ids(uri, options, "c")
    counts = Counter(ids)
    lost = len(expected_ids(workers, rounds, shared) - set(counts))
    duplicates = sum(n - 1 for n in counts.values())
    return (str(len(ids)), str(len(counts)), str(duplicates), str(lost), str(errors), f"{seconds:.1f}")


def _creates(
    writer: Any, uri: str, options: dict[str, str] | None, workers: int, trials: int
) -> tuple[str, ...]:
    start = time.perf_counter()
    lossy = lost = errors = 0
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager, ProcessPoolExecutor(workers, mp_context=context) as pool:
        for trial in range(trials):
            line_up = manager.Barrier(workers)
            calls = [pool.submit(writer, uri, options, f"n{trial}", w, 1, 0, line_up) for w in range(workers)]
            errors += sum(f.result() for f in calls)
            missing = expected_ids(workers, 1, 0) - set(table_ids(uri, options, f"n{trial}"))
            lossy += bool(missing)
            lost += len(missing)
    seconds = time.perf_counter() - start
    return (str(trials), str(lossy), str(lost), str(errors), f"{seconds:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workers", type=int, nargs="+", default=[4, 8])
    parser.add_argument("--rounds", type=int, default=10, help="upserts per process")
    parser.add_argument("--shared", type=int, default=5, help="new ids every process writes per round")
    parser.add_argument("--creates", type=int, default=10, help="new collections N processes create at once")
    parser.add_argument("--no-s3", action="store_true")
    args = parser.parse_args()

    rows: list[tuple[str, ...]] = []
    creates: list[tuple[str, ...]] = []
    with ExitStack() as stack:
        storages: list[tuple[str, Any]] = []
        tmp = stack.enter_context(tempfile.TemporaryDirectory())
        counter = iter(range(1_000))
        storages.append(("local disk", lambda: (f"{tmp}/db{next(counter)}", None)))
        if not args.no_s3 and moto_available():
            server = stack.enter_context(s3_server())
            storages.append(("S3 (moto)", lambda: (server.new_bucket(), server.storage_options)))
        elif not args.no_s3:
            print("moto is not installed: object storage skipped (pip install 'turnkit[s3-test]')")
        for label, make in storages:
            for workers in args.workers:
                for system, writer in (("turnkit", turnkit_writer), ("raw LanceDB", raw_writer)):
                    uri, options = make()
                    result = _trial(writer, uri, options, workers, args.rounds, args.shared)
                    rows.append((label, str(workers), system, *result))
                    print("  ".join(rows[-1]), flush=True)
                    if args.creates:
                        uri, options = make()
                        result = _creates(writer, uri, options, workers, args.creates)
                        creates.append((label, str(workers), system, *result))
                        print("  ".join(creates[-1]), flush=True)
    expected = len(expected_ids(1, args.rounds, args.shared)) - args.rounds
    print(
        f"\n{args.rounds} upserts per process, {args.shared} shared new ids per round "
        f"({expected} shared ids + {args.rounds} own ids per process)\n"
    )
    header = ("storage", "N", "system", "rows", "distinct ids", "duplicates", "lost", "errors", "seconds")
    print(table(rows, header))
    if creates:
        print(f"\nN processes create one new collection at once and write, {args.creates} times\n")
        header = ("storage", "N", "system", "trials", "trials losing rows", "rows lost", "errors", "seconds")
        print(table(creates, header))


if __name__ == "__main__":
    main()
