"""Real-text vectors for the peer benches: WordLlama over the docs and docstrings of installed packages.

The synthetic set in ``peers.py`` is Gaussian clusters; real text embeds with a
different structure (a few dense topics, long tails, near-copies). This set is
every paragraph of at least eight words found in the docstrings (read with
``ast``, nothing is imported) and the ``.md``/``.rst``/``.txt`` files of the
packages in this environment, deduplicated, in a fixed order, encoded with
WordLlama (256-d, normalised). gensim's test data and the operating system's
documentation are left out: they are held out for the quality checks.

The vectors are cached under ``bench/.cache`` by the environment's package
list, so only the first run encodes. A size above what the packages yield is
padded with the synthetic clusters; ``describe()`` says how many rows are real.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import re
import sysconfig
from pathlib import Path

import numpy as np

CACHE = Path(__file__).resolve().parent / ".cache"
# A cached .npy to use whatever this environment's packages are (a bench run from another venv
# reads the same passages as the project's); set by the scripts' ``--text-vectors``.
PINNED: Path | None = None
_MIN_WORDS = 8
_MAX_CHARS = 2_000
_SKIP_PARTS = {"test_data", "__pycache__", "site-packages/gensim/test"}
_SKIP_NAMES = re.compile(r"^(LICEN[CS]E|COPYING|NOTICE|AUTHORS|RECORD|entry_points|top_level)", re.I)


def _packages_key() -> str:
    dists = sorted(f"{d.metadata['Name']}=={d.version}" for d in importlib.metadata.distributions())
    return hashlib.sha1("\n".join(dists).encode()).hexdigest()[:12]


def _paragraphs(text: str) -> list[str]:
    out = []
    for block in re.split(r"\n\s*\n", text):
        words = block.split()
        if len(words) >= _MIN_WORDS:
            out.append(" ".join(words)[:_MAX_CHARS])
    return out


def _docstrings(path: Path) -> list[str]:
    try:
        tree = ast.parse(path.read_bytes())
    except (SyntaxError, ValueError, RecursionError):
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=True)
            if doc:
                found += _paragraphs(doc)
    return found


def passages() -> list[str]:
    """Every distinct paragraph of the environment's docstrings and text files, in path order."""
    root = Path(sysconfig.get_paths()["purelib"])
    seen: set[str] = set()
    out: list[str] = []
    for path in sorted(root.rglob("*")):
        text = str(path)
        if any(part in text for part in _SKIP_PARTS) or not path.is_file() or _SKIP_NAMES.match(path.name):
            continue
        if path.suffix == ".py":
            found = _docstrings(path)
        elif path.suffix in (".md", ".rst", ".txt") and ".dist-info" not in text:
            found = _paragraphs(path.read_text(errors="replace"))
        else:
            continue
        for p in found:
            if p not in seen:
                seen.add(p)
                out.append(p)
    return out


def text_vectors() -> np.ndarray:
    """The encoded passages (cached), float32, one row each."""
    cached = PINNED or CACHE / f"text-vectors-{_packages_key()}.npy"
    if cached.exists():
        return np.load(cached)
    from turnkit.batteries.vector import WordLlamaEncoder

    texts = passages()
    encoder = WordLlamaEncoder()
    parts = [
        np.asarray(encoder.encode(texts[i : i + 4096], kind="document")) for i in range(0, len(texts), 4096)
    ]
    vectors = np.concatenate(parts).astype(np.float32)
    CACHE.mkdir(exist_ok=True)
    np.save(cached, vectors)
    return vectors


def text_dataset(
    rng: np.random.Generator, n: int, queries: int, synthetic: np.ndarray
) -> tuple[np.ndarray, np.ndarray, int]:
    """``n`` rows and ``queries`` query vectors of real text, padded from ``synthetic``.

    The queries are held-out passages (never rows), the way an agent's question
    is a new text. Returns the rows, the queries and how many rows are real.
    """
    pool = text_vectors()
    order = rng.permutation(len(pool))
    qs = pool[order[:queries]]
    rest = pool[order[queries:]]
    real = min(n, len(rest))
    rows = rest[:real]
    if real < n:
        rows = np.concatenate([rows, synthetic[: n - real]])
    return np.ascontiguousarray(rows), np.ascontiguousarray(qs), real
