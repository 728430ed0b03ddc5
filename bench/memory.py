"""Peak memory against text length: turnkit's encoders vs the same model called directly.

Each measurement runs in a fresh process, which builds one text of the given size
(real prose from turnkit's docs, repeated), loads the encoder, notes its resident
memory, encodes the text once and reports the peak growth. The baseline calls
the model itself on the whole text (WordLlama's ``embed``); it is skipped above
``--baseline-max`` MB, where it would take gigabytes.

    python bench/memory.py                      # 1, 4, 10, 40 MB
    python bench/memory.py --sizes 1 4 --encoders wordllama hash
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import table

_CHILD = r"""
import json, resource, sys
from pathlib import Path
size_mb, encoder, mode = float(sys.argv[1]), sys.argv[2], sys.argv[3]
prose = " ".join(p.read_text() for p in sorted(Path(sys.argv[4]).glob("*.md")))
text = (prose * (int(size_mb * 2**20) // len(prose) + 1))[: int(size_mb * 2**20)]
from turnkit.batteries.vector import HashEncoder, WordLlamaEncoder
if encoder == "wordllama":
    enc = WordLlamaEncoder()
    enc.encode(["warm up"], kind="document")
elif encoder == "minilm":
    from turnkit.batteries.vector import MiniLMEncoder
    enc = MiniLMEncoder()
    enc.encode(["warm up"], kind="document")
else:
    enc = HashEncoder(256)
def rss() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
before = rss()
if mode == "direct":
    enc._load().embed([text], norm=True)
else:
    enc.encode([text], kind="document")
print(json.dumps({"before": before, "after": rss()}))
"""


def _measure(size: float, encoder: str, mode: str, docs: Path) -> float | None:
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(size), encoder, mode, str(docs)],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if proc.returncode != 0:
        print(
            f"  ({encoder} {mode} {size} MB failed: {proc.stderr.strip().splitlines()[-1:]})", file=sys.stderr
        )
        return None
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    return float(data["after"] - data["before"])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=float, nargs="+", default=[1, 4, 10, 40], metavar="MB")
    parser.add_argument("--encoders", nargs="+", default=["wordllama", "hash", "minilm"])
    parser.add_argument("--baseline-max", type=float, default=4, metavar="MB")
    args = parser.parse_args()
    docs = Path(__file__).resolve().parents[1] / "docs"
    rows = []
    for encoder in args.encoders:
        for size in args.sizes:
            grown = _measure(size, encoder, "turnkit", docs)
            direct = (
                _measure(size, encoder, "direct", docs)
                if encoder == "wordllama" and size <= args.baseline_max
                else None
            )
            rows.append(
                (
                    encoder,
                    f"{size:g}",
                    "-" if grown is None else f"{grown:.0f}",
                    "-" if grown is None else f"{grown / size:.1f}x",
                    "-" if direct is None else f"{direct:.0f}",
                    "-" if direct is None else f"{direct / size:.0f}x",
                )
            )
            print(table(rows[-1:], ("encoder", "text MB", "turnkit +MB", "÷ text", "direct +MB", "÷ text")))
    print()
    print(
        table(
            rows,
            ("encoder", "text MB", "turnkit peak growth MB", "÷ text size", "model direct MB", "÷ text size"),
        )
    )


if __name__ == "__main__":
    main()
