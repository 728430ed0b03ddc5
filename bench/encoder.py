"""The default encoder against its own library: turnkit's WordLlama and ``wordllama``'s ``embed``.

The same chunk texts go through both, the two alternated round by round:
real text (Python's pydoc topics and the installed packages' docs, as
``bench/quality.py`` reads them) cut by turnkit's own chunker, so batches mix
short and long chunks as ingest's do. Prints CPU and wall seconds per round
(medians), the ratio turnkit ÷ wordllama, and the largest difference between
the two vectors.

    python bench/encoder.py [--rounds 5] [--batch 256] [--chunks 4000]

A script, not a test: nothing here asserts on timings.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np
from _common import table

from turnkit.batteries.vector.encoders._wordllama import WordLlamaModel
from turnkit.ingest import chunk_document, load_document


def corpus_texts(limit: int) -> list[str]:
    """Chunks of pydoc topics, then of installed packages' descriptions, up to ``limit``."""
    import site
    import tempfile
    from pydoc_data.topics import topics

    docs = {"pydoc": "\n\n".join(f"# {k}\n\n{v}" for k, v in sorted(topics.items()))}
    for root in site.getsitepackages():
        for path in sorted(Path(root).glob("*.dist-info/METADATA"))[:400]:
            docs[path.parent.name] = path.read_text(errors="replace")
    texts: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in docs.items():
            path = Path(tmp, f"{name}.md")
            path.write_text(text)
            texts.extend(chunk.text for chunk in chunk_document(load_document(path)))
            if len(texts) >= limit:
                break
    return texts[:limit]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch", type=int, default=256, help="texts per embed call (the encoder's default)")
    parser.add_argument("--chunks", type=int, default=4000)
    args = parser.parse_args()
    import wordllama

    texts = corpus_texts(args.chunks)
    lengths = [len(t) for t in texts]
    median = statistics.median(lengths)
    print(f"{len(texts)} chunks, {median:.0f} chars median, {max(lengths)} max", flush=True)
    ours = WordLlamaModel.load(256)
    assert ours is not None, "the installed wordllama files were not found"
    theirs = wordllama.WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True)
    systems = {
        "turnkit WordLlama": lambda: ours.embed(texts, batch_size=args.batch),
        "wordllama embed": lambda: theirs.embed(texts, batch_size=args.batch),
    }
    got = {name: np.asarray(fn()) for name, fn in systems.items()}  # warm-up, and the vectors compared
    cpu: dict[str, list[float]] = {name: [] for name in systems}
    wall: dict[str, list[float]] = {name: [] for name in systems}
    for _ in range(args.rounds):
        for name, fn in systems.items():
            c, w = time.process_time(), time.perf_counter()
            fn()
            cpu[name].append(time.process_time() - c)
            wall[name].append(time.perf_counter() - w)
    base = "wordllama embed"
    rows = [
        (
            name,
            f"{statistics.median(cpu[name]):.2f}",
            f"{statistics.median(wall[name]):.2f}",
            f"{statistics.median(cpu[name]) / statistics.median(cpu[base]):.2f}",
            f"{statistics.median(wall[name]) / statistics.median(wall[base]):.2f}",
        )
        for name in systems
    ]
    print(table(rows, ("system", "CPU s", "wall s", "CPU ÷ wordllama", "wall ÷ wordllama")))
    diff = float(np.abs(got["turnkit WordLlama"] - got[base]).max())
    print(f"largest difference between the two vectors: {diff:.2e}")


if __name__ == "__main__":
    main()
