"""tests/adk runs in .venv-adk (scripts/test-adk): google-adk's pins cannot share .venv.

Where google-adk is not installed (the main run), nothing here is collected.
"""

from __future__ import annotations

import importlib.util

try:
    _ADK = importlib.util.find_spec("google.adk") is not None
except ModuleNotFoundError:  # no `google` package at all
    _ADK = False

collect_ignore_glob = [] if _ADK else ["test_*.py"]
