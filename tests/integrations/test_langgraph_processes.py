"""A LangGraph agent saves a memory in one process and recalls it in another, through one on-disk store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("langgraph.graph")

from turnkit.batteries.vector import HashEncoder, create_vector_store
from turnkit.integrations.langgraph import TurnkitStore

from ._langgraph_agent import run

AGENT = Path(__file__).with_name("_langgraph_agent.py")


def _run(uri: str, mode: str) -> dict[str, object]:
    env = os.environ | {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run(
        [sys.executable, str(AGENT), uri, mode],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    state: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return state


def test_a_memory_saved_by_one_process_is_recalled_by_another(tmp_path: Path) -> None:
    uri = str(tmp_path / "db")
    saved = run(uri, "save")  # in this process
    assert saved["answer"] == "The user drinks green tea every morning."
    recalled = _run(uri, "recall")  # in a new one
    assert recalled["memories"] == ["The user drinks green tea every morning."]
    # One item, in the tenant's namespace; nothing under another tenant.
    store = TurnkitStore(
        create_vector_store(uri=uri, encoder=HashEncoder(64)), collection="memories", tenant_depth=1
    )
    assert store.list_namespaces(prefix=("user-1",)) == [("user-1", "memories")]
    assert [i.value for i in store.search(("user-1",))] == [
        {"text": "The user drinks green tea every morning."}
    ]
    assert store.search(("user-2",)) == []
