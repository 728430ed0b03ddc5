"""`turnkit demo` end to end: shipped docs → WordLlama → LanceDB → TurnRunner → (model | prompt)."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from turnkit.cli import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, shipped_docs
from turnkit.cli._demo import DEMO_QUESTIONS

from .conftest import Run

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A demo database ingested once per module (by the first demo run of the module)."""
    return tmp_path_factory.mktemp("demo") / "db"


def test_demo_from_scratch_then_again(run: Run, tmp_path: Path) -> None:
    first = run("demo", timeout=300)
    assert first.code == EXIT_OK, first.err
    out = first.out
    pages = sorted(p.name for p in shipped_docs().rglob("*.md"))  # docs/integrations/ included
    assert f"{len(pages)} files ({len(pages)} written, 0 unchanged" in out
    # The default location: .turnkit/demo under the working directory.
    assert (tmp_path / ".turnkit" / "demo" / "turnkit-docs.lance").is_dir()
    assert "WordLlamaEncoder(dimension=256)" in out
    assert "No model endpoint is configured" in out and "TURNKIT_OPENAI_MODEL" in out

    blocks = re.split(r"^Question \d/3: ", out, flags=re.M)[1:]
    assert [b.splitlines()[0] for b in blocks] == list(DEMO_QUESTIONS)
    for block in blocks:
        # A newcomer's first screen: short, and an answer for every question.
        assert len(block.splitlines()) < 40, block
        assert "Answer (extractive:" in block
        quotes = re.findall(r"^  • (.+\n(?:    .+\n)*?)      — ([\w./-]+\.md)", block, re.M)
        assert 1 <= len(quotes) <= 3, block
        # Each quote is one whole prose sentence: no code, no fragment cut where code was left out.
        for text, _ in quotes:
            sentence = " ".join(text.split())
            assert re.match(r"[A-Z0-9`\"'(*_].*[.!?][*_`\"')\]]*$", sentence), sentence
            assert not re.search(r"^(?:assert|await|import|from \S+ import|def|print\()", sentence), sentence
        hits = re.findall(r"^  \d\. score (0\.\d{3})  first-party  ([\w./-]+\.md)", block, re.M)
        assert len(hits) == 3, block[:2000]
        scores = [float(s) for s, _ in hits]
        assert scores == sorted(scores, reverse=True)
        assert all(Path(source).name in pages for _, source in hits)
        # Every quoted sentence comes from one of the retrieved pages.
        assert {src for _, src in quotes} <= {src for _, src in hits}
        tokens = re.search(r"^Prompt: (\d+) tokens of a 6000 budget \(o200k_base: system (\d+)", block, re.M)
        assert tokens is not None and int(tokens.group(1)) > int(tokens.group(2)) > 0
        assert "--show-prompt prints it" in block
        assert "The prompt a model receives:" not in block and "│ <retrieved_corpus>" not in block
    # The right page answers each question (the sources are turnkit's own docs).
    assert "ingesting.md § Ingesting documents › Chunking" in blocks[0]
    assert "trust-tiers.md" in blocks[1].split("Prompt:")[0]
    assert "filters.md" in blocks[2].split("Prompt:")[0]

    second = run("demo", "--show-prompt", "-q", DEMO_QUESTIONS[0], timeout=300)
    assert second.code == EXIT_OK, second.err
    assert f"{len(pages)} files (0 written, {len(pages)} unchanged" in second.out
    assert "0 chunks written" in second.out
    assert "The prompt a model receives:" in second.out
    assert "│ <retrieved_corpus>" in second.out and "┌── user" in second.out


def test_demo_json_and_custom_questions(run: Run, demo_db: Path) -> None:
    # Three: the pages are turnkit's own docs, and the second and third hits score within 0.001 of
    # each other, so any edit to the docs may swap them.
    result = run(
        "demo", "--uri", str(demo_db), "--json", "-q", "How are documents split into chunks?", "-k", "3"
    )
    assert result.code == EXIT_OK, result.err
    data = json.loads(result.out)
    assert data["collection"] == "turnkit-docs" and data["model"] is None
    (turn,) = data["turns"]
    assert turn["question"] == "How are documents split into chunks?"
    assert len(turn["retrieved"]) == 3
    assert {r["trust_tier"] for r in turn["retrieved"]} == {"first-party"}
    assert turn["retrieved"][0]["source"].startswith("ingesting.md")
    assert turn["answer"] is None and turn["prompt_tokens"] > 100
    assert turn["answer_kind"] == "extractive"
    sources = {r["source"] for r in turn["retrieved"]}
    assert turn["extractive_answer"] and all(q["source"] in sources for q in turn["extractive_answer"])
    system = turn["prompt"][0]["content"]
    assert turn["prompt"][0]["role"] == "system" and "<retrieved_corpus>" in system
    assert "Chunks are measured in **tokens**" in system


def test_the_demo_ingests_the_pages_readers_see_in_docs() -> None:
    shipped = {str(p.relative_to(shipped_docs())): p.read_bytes() for p in shipped_docs().rglob("*.md")}
    readers = {str(p.relative_to(ROOT / "docs")): p.read_bytes() for p in (ROOT / "docs").rglob("*.md")}
    assert shipped == readers
    assert {"cli.md", "ingesting.md", "trust-tiers.md"} <= set(shipped)


class _ChatServer:
    """A loopback OpenAI-compatible /v1/chat/completions endpoint that records what it gets."""

    def __init__(self, status: int = 200) -> None:
        self.requests: list[dict[str, Any]] = []
        self.status = status
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(
                    {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
                )
                if server.status != 200:
                    payload = {"error": {"message": "model overloaded"}}
                else:
                    cited = re.findall(r'source="([^"]+)"', body["messages"][0]["content"])
                    reply = f"Answer {len(server.requests)} from {cited[0] if cited else 'nothing'}."
                    payload = {"choices": [{"message": {"role": "assistant", "content": reply}}]}
                data = json.dumps(payload).encode()
                self.send_response(server.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> _ChatServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def chat_server() -> Iterator[_ChatServer]:
    with _ChatServer() as server:
        yield server


def test_demo_answers_with_an_openai_compatible_endpoint(
    run: Run, demo_db: Path, chat_server: _ChatServer
) -> None:
    env = {
        "TURNKIT_OPENAI_BASE_URL": chat_server.url,
        "TURNKIT_OPENAI_MODEL": "tiny-test-model",
        "TURNKIT_OPENAI_API_KEY": "sk-test-123",
    }
    result = run("demo", "--uri", str(demo_db), env=env)
    assert result.code == EXIT_OK, result.err
    assert len(chat_server.requests) == 3
    for n, request in enumerate(chat_server.requests, 1):
        assert request["path"] == "/v1/chat/completions"
        assert request["auth"] == "Bearer sk-test-123"
        body = request["body"]
        assert body["model"] == "tiny-test-model"
        assert [m["role"] for m in body["messages"]] == ["system", "user"]
        assert body["messages"][1]["content"] == DEMO_QUESTIONS[n - 1]
        assert "<retrieved_corpus>" in body["messages"][0]["content"]
        answer = re.search(rf"^  Answer {n} from ([\w./-]+\.md[^\n]*)\.$", result.out, re.M)
        assert answer is not None, result.out[-3000:]
    assert "OpenAIChatModel(model='tiny-test-model'" in result.out
    assert "The prompt a model receives" not in result.out
    assert "No model endpoint" not in result.out and "extractive" not in result.out
    assert "sk-test-123" not in result.out + result.err


def test_demo_flags_override_the_endpoint_variables(
    run: Run, demo_db: Path, chat_server: _ChatServer
) -> None:
    env = {"TURNKIT_OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "TURNKIT_OPENAI_MODEL": "env-model"}
    result = run(
        "demo",
        "--uri",
        str(demo_db),
        "--base-url",
        chat_server.url,
        "--model",
        "flag-model",
        "-q",
        "What is a trust tier?",
        env=env,
    )
    assert result.code == EXIT_OK, result.err
    assert [r["body"]["model"] for r in chat_server.requests] == ["flag-model"]
    assert chat_server.requests[0]["auth"] is None
    assert re.search(r"Answer 1 from [\w./-]+\.md", result.out)


def test_demo_model_failures_are_one_line_runtime_errors(run: Run, demo_db: Path) -> None:
    with _ChatServer(status=503) as server:
        env = {"TURNKIT_OPENAI_BASE_URL": server.url, "TURNKIT_OPENAI_MODEL": "m"}
        result = run("demo", "--uri", str(demo_db), env=env)
        assert result.code == EXIT_FAILURE
        assert result.err.strip().splitlines() == [
            "turnkit: error: [E_MODEL_FAILED] The model endpoint answered HTTP 503: model overloaded "
            "Hint: The server failed; retry later."
        ]
        debug = run("demo", "--uri", str(demo_db), "--debug", env=env)
        assert debug.code == EXIT_FAILURE
        assert "Traceback (most recent call last)" in debug.err
        assert debug.err.strip().splitlines()[-1].startswith("turnkit: error: [E_MODEL_FAILED]")


def test_demo_endpoint_without_a_model_name_is_a_usage_error(run: Run, tmp_path: Path) -> None:
    result = run(
        "demo", "--uri", str(tmp_path / "db"), env={"TURNKIT_OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    )
    assert result.code == EXIT_USAGE
    assert result.err.startswith(
        "turnkit: error: [E_CLI_USAGE] A model endpoint is set (http://127.0.0.1:9/v1)"
    )
    assert "TURNKIT_OPENAI_MODEL" in result.err
    assert not (tmp_path / "db").exists()  # checked before any work


def test_demo_reads_the_generic_openai_variables_too(
    run: Run, demo_db: Path, chat_server: _ChatServer
) -> None:
    env = {"OPENAI_BASE_URL": chat_server.url, "TURNKIT_MODEL": "generic", "OPENAI_API_KEY": "sk-generic"}
    result = run("demo", "--uri", str(demo_db), "-q", "What is a trust tier?", env=env)
    assert result.code == EXIT_OK, result.err
    assert [(r["body"]["model"], r["auth"]) for r in chat_server.requests] == [
        ("generic", "Bearer sk-generic")
    ]
