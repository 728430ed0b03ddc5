"""The OpenAI-compatible clients' HTTP edge cases, against real servers on loopback."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from turnkit import ChatMessage, ModelError, OpenAIChatModel, ScriptedModel, TurnRunner, TurnRunnerConfig

MESSAGES = [ChatMessage(role="user", content="hi")]
REPLY = json.dumps({"choices": [{"message": {"role": "assistant", "content": "ok"}}]}).encode()


def _serve(handle: Callable[[BaseHTTPRequestHandler], None]) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            handle(self)

        def do_GET(self) -> None:
            handle(self)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)


def test_a_redirect_is_refused_and_the_key_is_not_replayed() -> None:
    seen: list[dict[str, str]] = []

    def other(h: BaseHTTPRequestHandler) -> None:
        seen.append(dict(h.headers))
        h.send_response(200)
        h.send_header("Content-Length", str(len(REPLY)))
        h.end_headers()
        h.wfile.write(REPLY)

    for other_url in _serve(other):

        def redirect(h: BaseHTTPRequestHandler, other_url: str = other_url) -> None:
            h.send_response(302)
            h.send_header("Location", other_url + "/v1/chat/completions")
            h.send_header("Content-Length", "0")
            h.end_headers()

        for url in _serve(redirect):
            model = OpenAIChatModel("m", base_url=url + "/v1", api_key="SECRET")
            with pytest.raises(ModelError) as info:
                asyncio.run(model.complete(MESSAGES))
            assert info.value.status == 302 and "redirect" in info.value.hint
    assert seen == []


def test_a_truncated_body_is_a_model_error() -> None:
    def short(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Length", str(len(REPLY) + 50))
        h.end_headers()
        h.wfile.write(REPLY)
        h.wfile.flush()
        h.connection.close()

    for url in _serve(short):
        with pytest.raises(ModelError):
            asyncio.run(OpenAIChatModel("m", base_url=url + "/v1").complete(MESSAGES))


def test_timeout_bounds_the_whole_response_not_each_read() -> None:
    def drip(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Length", str(len(REPLY)))
        h.end_headers()
        try:
            for byte in REPLY:
                h.wfile.write(bytes([byte]))
                h.wfile.flush()
                time.sleep(0.05)
        except (BrokenPipeError, ConnectionResetError):
            pass

    for url in _serve(drip):
        with pytest.raises(ModelError, match="within 0.5 s"):
            asyncio.run(OpenAIChatModel("m", base_url=url + "/v1", timeout=0.5).complete(MESSAGES))


def test_an_observer_that_raises_does_not_fail_the_turn(caplog: pytest.LogCaptureFixture) -> None:
    def observer(event: Any) -> None:
        if event.name == "model":
            raise ValueError("observer bug")

    runner = TurnRunner(TurnRunnerConfig(model=ScriptedModel(["fine"]), on_event=observer))
    result = runner.run_sync("hello")
    assert result.reply == "fine"
    assert [m.role for m in runner.message_store.messages()] == ["user", "assistant"]  # type: ignore[union-attr]
    assert "observer raised" in caplog.text
