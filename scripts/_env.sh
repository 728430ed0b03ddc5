# Sourced by the other scripts: make .venv and install the pinned set, once per change.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-python3}"
VENV="$ROOT/.venv"
# TURNKIT_HEAVY=1 (set by scripts/test) adds the test-only pins in requirements/heavy.txt.
REQS=(requirements/lock.txt)
PROFILE=core
if [ "${TURNKIT_HEAVY:-0}" = 1 ]; then
    REQS+=(requirements/heavy.txt)
    PROFILE=heavy
fi
STAMP="$VENV/.turnkit-installed-$PROFILE"
WANT="$(cat "${REQS[@]}" pyproject.toml | sha256sum | cut -d' ' -f1)"
if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv "$VENV"
fi
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT" ]; then
    echo "turnkit: installing pinned dependencies into .venv (once per change)..." >&2
    for req in "${REQS[@]}"; do
        "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req"
    done
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
    echo "$WANT" > "$STAMP"
fi
export PATH="$VENV/bin:$PATH"
# LanceDB logs a warning per query in some projections; tests and demos want quiet output.
export LANCEDB_LOG="${LANCEDB_LOG:-error}"
