"""The developer-question corpus: documentation shipped inside PyPI packages, laid out as files to ingest.

    python bench/devq_corpus.py --download       # fetch the three pinned artifacts with pip, then build
    python bench/devq_corpus.py --out /tmp/devq  # build from the artifacts already in the cache folder
    python bench/devq_corpus.py --check          # build; fail unless it matches bench/data/devq_pages.json

Sources (pinned; each artifact is the file ``pip download --no-deps`` fetches):

- pygame 2.6.1, wheel: ``pygame/docs/generated``, the HTML reference and
  tutorials *and* the reST sources Sphinx keeps beside them
  (``_sources/ref/mixer.rst.txt`` next to ``ref/mixer.html``), so most
  reference pages are there twice, as source and as rendering.
- SQLAlchemy 1.4.54, sdist: ``doc/build`` (the reST sources) and ``doc``
  (the rendered HTML of the same pages): every page twice.
- ply 3.11, sdist: ``README.md`` and ``doc/ply.html``, the whole manual on
  one HTML page, whose examples the README repeats.

Left out: style sheets, scripts and images (ingest skips them anyway), the
search page and Sphinx's highlighted copies of example code (``_modules``).

The files land in ``OUT/<name>-<version>/...`` with the paths they have in the
artifact. ``page_key`` names the page a file renders: the reST source and its
HTML are the same page (``sqlalchemy:orm/session_basics``), which is what the
questions in ``bench/data/devq_questions.json`` are labelled with.
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
PAGES_FILE = DATA / "devq_pages.json"
DEFAULT_CACHE = Path.home() / ".cache" / "turnkit-bench" / "devq"
_DOC_EXT = (".html", ".rst", ".rst.txt", ".md")


@dataclass(frozen=True)
class Source:
    name: str
    version: str
    kind: str  # "wheel" or "sdist"
    artifact: str  # glob of the file pip download writes
    roots: tuple[str, ...]  # folders (or files) inside the artifact, after its top folder for an sdist
    exclude: tuple[str, ...]  # fnmatch patterns over the path inside the artifact

    @property
    def pip_args(self) -> list[str]:
        binary = ["--only-binary", ":all:"] if self.kind == "wheel" else ["--no-binary", ":all:"]
        return ["--no-deps", *binary, f"{self.name}=={self.version}"]


SOURCES = (
    Source(
        "pygame",
        "2.6.1",
        "wheel",
        "pygame-2.6.1-*.whl",
        ("pygame/docs/generated/",),
        ("*/_static/*", "*/_images/*", "*/search.html"),
    ),
    Source(
        "sqlalchemy",
        "1.4.54",
        "sdist",
        "sqlalchemy-1.4.54.tar.gz",
        ("doc/",),
        (
            "doc/_static/*",
            "doc/_images/*",
            "doc/_modules/*",
            "doc/build/texinputs/*",
            "doc/search.html",
            "doc/notfound.html",
            "doc/build/requirements.txt",
        ),
    ),
    Source("ply", "3.11", "sdist", "ply-3.11.tar.gz", ("README.md", "doc/"), ()),
)


def page_key(rel: str) -> str | None:
    """The page a corpus file renders (``pygame:ref/mixer``), from its path under the corpus folder.

    The reST source and the HTML of one page get the same key; ``None`` for a path
    outside the corpus's sources.
    """
    top, _, path = rel.replace("\\", "/").partition("/")
    name = top.rsplit("-", 1)[0]
    stem = re.sub(r"(\.rst\.txt|\.rst|\.html|\.md)$", "", path)
    if name == "pygame":
        stem = stem.removeprefix("pygame/docs/generated/").removeprefix("_sources/")
    elif name == "sqlalchemy":
        stem = stem.removeprefix("doc/").removeprefix("build/")
    elif name == "ply":
        stem = stem.removeprefix("doc/")
    else:
        return None
    return f"{name}:{stem}"


def _members(src: Source, archive: Path) -> list[tuple[str, bytes]]:
    out: list[tuple[str, bytes]] = []

    def wanted(path: str) -> bool:
        return (
            path.endswith(_DOC_EXT)
            and any(path == r or (r.endswith("/") and path.startswith(r)) for r in src.roots)
            and not any(fnmatch.fnmatch(path, p) for p in src.exclude)
        )

    if src.kind == "wheel":
        with zipfile.ZipFile(archive) as z:
            out = [(n, z.read(n)) for n in sorted(z.namelist()) if wanted(n)]
    else:
        with tarfile.open(archive) as t:
            for m in sorted(t.getmembers(), key=lambda m: m.name):
                inner = m.name.partition("/")[2]  # drop the sdist's top folder
                if m.isfile() and wanted(inner):
                    f = t.extractfile(m)
                    assert f is not None
                    out.append((inner, f.read()))
    return out


def find_artifact(src: Source, cache: Path, download: bool) -> Path:
    found = sorted(cache.glob(src.artifact))
    if not found and download:
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "-d", str(cache), *src.pip_args], check=True
        )
        found = sorted(cache.glob(src.artifact))
    if not found:
        raise SystemExit(
            f"missing {src.name} {src.version} ({src.kind}) in {cache}.\n"
            f"  fetch it:  pip download -d {cache} {' '.join(src.pip_args)}\n"
            "  or rerun with --download"
        )
    return found[0]


def build(out: Path, cache: Path = DEFAULT_CACHE, *, download: bool = False) -> dict[str, object]:
    """Write the corpus files under ``out`` (emptied first); the manifest of what was written."""
    if out.exists():
        shutil.rmtree(out)
    pages: dict[str, list[str]] = {}
    digest = hashlib.sha256()
    for src in SOURCES:
        archive = find_artifact(src, cache, download)
        for inner, data in _members(src, archive):
            rel = f"{src.name}-{src.version}/{inner}"
            target = out / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            digest.update(rel.encode() + b"\0" + hashlib.sha256(data).digest())
            key = page_key(rel)
            assert key is not None, rel
            pages.setdefault(key, []).append(rel)
    return {
        "packages": {s.name: s.version for s in SOURCES},
        "files": sum(len(v) for v in pages.values()),
        "sha256": digest.hexdigest(),
        "pages": {k: sorted(v) for k, v in sorted(pages.items())},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("/tmp/turnkit-devq-corpus"))
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="where the artifacts are (or go)")
    parser.add_argument("--download", action="store_true", help="pip download the artifacts that are missing")
    parser.add_argument("--write-pages", action="store_true", help=f"write the manifest to {PAGES_FILE}")
    parser.add_argument("--check", action="store_true", help=f"fail unless the build matches {PAGES_FILE}")
    args = parser.parse_args()
    manifest = build(args.out, args.cache, download=args.download)
    pages = manifest["pages"]
    assert isinstance(pages, dict)
    print(f"{manifest['files']} files, {len(pages)} pages in {args.out} ({manifest['packages']})")
    if args.write_pages:
        PAGES_FILE.write_text(json.dumps(manifest, indent=1) + "\n")
    if args.check:
        expected = json.loads(PAGES_FILE.read_text())
        if expected["sha256"] != manifest["sha256"]:
            raise SystemExit(f"the built corpus differs from {PAGES_FILE} (sha256 {manifest['sha256']})")
        print("matches", PAGES_FILE.name)


if __name__ == "__main__":
    main()
