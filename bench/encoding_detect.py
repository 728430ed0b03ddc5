"""The cost of reading legacy-encoded text through charset-normalizer, against a plain decode.

Generates a messy set in memory (seeded): most files UTF-8, the rest in
cp1252 (French), cp1251 (Russian), cp1250 (Polish), Big5 (Chinese), Shift JIS
(Japanese) and KOI8-R, a few KiB each, plus a few binary files. Then times,
per file, the best of ``--repeat`` runs of:

* **plain**: ``bytes.decode`` with the file's own codec, known in advance
  (the least any reader can do);
* **auto**: turnkit's decoding with ``fallback_encodings=["auto"]`` (UTF-8
  first, then the detector over every encoding it knows);
* **named**: ``fallback_encodings=[codec]``, the file's own codec named, which
  the detector only checks.

It prints the totals and their ratios to plain, over the whole set and over
the legacy files alone (UTF-8 files never reach the detector), and how many
files each mode decoded to exactly the original text (the rest refused, or,
for auto, decoded wrongly).

    .venv/bin/python bench/encoding_detect.py --files 2000
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable

from _common import table

from turnkit.ingest._decode import check_fallback_encodings, decode_text
from turnkit.ingest._errors import DocumentLoadError

SAMPLES = {
    "utf-8": "Le café est très apprécié à Paris — naïve “quotes” and emoji 🙂 in UTF-8. ",
    "cp1252": "Le café est très apprécié à Paris. Où est la gare ? Ça dépend de la météo, évidemment. ",
    "cp1251": "Привет, как дела? Это тестовый текст на русском языке о погоде и книгах. ",
    "cp1250": "Zażółć gęślą jaźń. Pójdźże, kiń tę chmurność w głąb flaszy! Polski tekst z ogonkami. ",
    "big5": "如何在 Python 中逐行讀取檔案？這是一個常見的問題，答案是使用 for 迴圈。",
    "shift_jis": "日本語のテキストです。これはシフトJISでエンコードされた文書のサンプルです。",
    "koi8_r": "Съешь же ещё этих мягких французских булок, да выпей чаю. Русский текст. ",
}
# Most files of a real tree are UTF-8: 70%, the rest shared by the legacy encodings.
WEIGHTS = {"utf-8": 70, "cp1252": 8, "cp1251": 5, "cp1250": 5, "big5": 5, "shift_jis": 4, "koi8_r": 3}


def corpus(n: int, seed: int) -> list[tuple[str, str, bytes]]:
    """(codec, text, bytes) per file; binary files have codec "binary"."""
    rng = random.Random(seed)
    codecs = list(WEIGHTS)
    files = []
    for i in range(n):
        if i % 50 == 49:
            files.append(("binary", "", bytes(rng.randrange(128, 256) for _ in range(2048))))
            continue
        codec = rng.choices(codecs, weights=[WEIGHTS[c] for c in codecs])[0]
        words = SAMPLES[codec].split(" ")
        text = "\n".join(
            " ".join(rng.choice(words) for _ in range(12)) for _ in range(rng.randrange(20, 120))
        )
        files.append((codec, text, text.encode(codec)))
    return files


def timed(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    files = corpus(args.files, args.seed)
    decode_text("é".encode("cp1252") * 40, path="warm-up", fallbacks=("auto",))  # imports and tables

    def attempt(data: bytes, fallbacks: tuple[str, ...]) -> str | None:
        try:
            return decode_text(data, path="bench", fallbacks=fallbacks)
        except DocumentLoadError as exc:
            if exc.code != "E_INGEST_DECODE_FAILED":
                raise
            return None

    modes: dict[str, Callable[[str, bytes], str | None]] = {
        "plain": lambda codec, data: None if codec == "binary" else data.decode(codec),
        "auto": lambda codec, data: attempt(data, ("auto",)),
        "named": lambda codec, data: attempt(
            data, check_fallback_encodings(["latin-1" if codec == "binary" else codec])
        ),
    }
    rows = []
    totals: dict[str, tuple[float, float]] = {}
    legacy = [f for f in files if f[0] != "utf-8"]
    for name, fn in modes.items():
        every = sum(timed(lambda f=fn, c=codec, d=data: f(c, d), args.repeat) for codec, _, data in files)
        only = sum(timed(lambda f=fn, c=codec, d=data: f(c, d), args.repeat) for codec, _, data in legacy)
        wrong = [codec for codec, text, data in legacy if codec != "binary" and fn(codec, data) != text]
        refused = sum(fn(codec, data) is None for codec, _, data in legacy)
        totals[name] = (every, only)
        right = len(legacy) - sum(c == "binary" for c, _, _ in legacy) - len(wrong)
        missed = ", ".join(f"{c} {wrong.count(c)}" for c in sorted(set(wrong))) or "-"
        rows.append((name, f"{every * 1000:.1f}", f"{only * 1000:.1f}", str(right), missed, str(refused)))
    size = sum(len(d) for _, _, d in files)
    binary = sum(c == "binary" for c, _, _ in files)
    print(f"{len(files)} files, {size / 1e6:.1f} MB, {len(legacy)} not UTF-8 ({binary} of them binary)")
    header = ("mode", "all files ms", "legacy files ms", "legacy text right", "not right", "refused")
    print(table(rows, header))
    for name in ("auto", "named"):
        every, only = totals[name]
        print(
            f"{name}: {every / totals['plain'][0]:.1f}x plain over the whole set, "
            f"{only / totals['plain'][1]:.1f}x over the legacy files "
            f"({only / max(len(legacy), 1) * 1000:.2f} ms per legacy file)"
        )


if __name__ == "__main__":
    main()
