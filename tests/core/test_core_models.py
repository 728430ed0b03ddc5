"""Models: ScriptedModel and the OpenAI-compatible adapter against a loopback server.

The ``loopback`` fixture (tests/core/conftest.py) is a real HTTP server on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest

from turnkit import (
    ChatMessage,
    ChatModel,
    ModelError,
    OpenAIChatModel,
    ScriptedModel,
    TurnRunner,
    TurnRunnerConfig,
    UsageError,
)

pytestmark = pytest.mark.anyio

MESSAGES = (ChatMessage("system", "Be brief."), ChatMessage("user", "Hi?"))


async def test_scripted_model_replays_strings_and_functions() -> None:
    async def async_reply(msgs: object) -> str:
        return "async"

    model = ScriptedModel(["one", lambda msgs: f"{len(msgs)} messages", async_reply])
    assert isinstance(model, ChatModel)
    assert await model.complete(MESSAGES) == "one"
    assert await model.complete(MESSAGES) == "2 messages"
    assert await model.complete(MESSAGES) == "async"
    assert model.calls == [MESSAGES] * 3
    with pytest.raises(ModelError, match="ran out of replies after 3"):
        await model.complete(MESSAGES)


async def test_scripted_model_misuse() -> None:
    with pytest.raises(UsageError, match=r"ScriptedModel\(\['hello'\]\)") as exc_info:
        ScriptedModel("hello")
    assert exc_info.value.code == "E_INVALID_MODEL_CONFIG"
    model = ScriptedModel([lambda msgs: 42])  # type: ignore[list-item,return-value]
    with pytest.raises(ModelError, match="int"):
        await model.complete(MESSAGES)


async def test_openai_adapter_success(loopback: Any) -> None:
    loopback.reply_with("Hello there.")
    model = OpenAIChatModel(
        "tiny-model",
        base_url=loopback.base_url + "/",
        api_key="sk-secret",
        temperature=0.0,
        extra_body={"max_tokens": 5},
        headers={"X-Trace": "t1"},
    )
    assert await model.complete(MESSAGES) == "Hello there."
    [request] = loopback.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["json"] == {
        "model": "tiny-model",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi?"}],
        "temperature": 0.0,
        "max_tokens": 5,
    }
    assert request["headers"]["Authorization"] == "Bearer sk-secret"
    assert request["headers"]["X-Trace"] == "t1"
    assert "sk-secret" not in repr(model)


async def test_openai_adapter_in_a_turn(loopback: Any) -> None:
    loopback.reply_with("From the endpoint.")
    runner = TurnRunner(TurnRunnerConfig(model=OpenAIChatModel("m", base_url=loopback.base_url)))
    result = await runner.run("question")
    assert result.reply == "From the endpoint."
    sent = loopback.requests[0]["json"]["messages"]
    assert [m["role"] for m in sent] == ["system", "user"] and sent[-1]["content"] == "question"
    assert "Authorization" not in loopback.requests[0]["headers"]  # no key, no header


@pytest.mark.parametrize(
    ("status", "body", "hint_part"),
    [
        (401, b'{"error": {"message": "Invalid API key"}}', "OPENAI_API_KEY"),
        (404, b"<html>not found</html>", "base_url"),
        (429, b'{"error": {"message": "slow down"}}', "retry"),
        (503, b"overloaded", "retry later"),
    ],
)
async def test_openai_adapter_http_errors(loopback: Any, status: int, body: bytes, hint_part: str) -> None:
    loopback.status, loopback.body = status, body
    with pytest.raises(ModelError) as info:
        await OpenAIChatModel("m", base_url=loopback.base_url).complete(MESSAGES)
    err = info.value
    assert err.status == status and err.code == "E_MODEL_FAILED"
    assert f"HTTP {status}" in err.message and hint_part in err.hint
    if body.startswith(b"{"):
        assert "Invalid API key" in err.message or "slow down" in err.message


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (b"this is not json", "not JSON"),
        (b"\xff\xfe\x00garbage", "not JSON"),
        (b'{"choices": []}', "choices[0].message.content"),
        (b'{"object": "error"}', "choices[0].message.content"),
        (b"[1, 2]", "choices[0].message.content"),
        (b'{"choices": [{"message": {"role": "assistant", "content": null}}]}', "no text"),
    ],
)
async def test_openai_adapter_malformed_responses(loopback: Any, body: bytes, fragment: str) -> None:
    loopback.status, loopback.body = 200, body
    with pytest.raises(ModelError, match=fragment.replace("[", r"\[").replace("]", r"\]")):
        await OpenAIChatModel("m", base_url=loopback.base_url).complete(MESSAGES)


async def test_openai_adapter_unreachable() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ModelError) as info:
        await OpenAIChatModel("m", base_url=f"http://127.0.0.1:{port}/v1", timeout=5).complete(MESSAGES)
    assert info.value.status is None and "base_url" in info.value.hint


async def test_openai_adapter_calls_run_concurrently(loopback: Any) -> None:
    loopback.reply_with("ok")
    model = OpenAIChatModel("m", base_url=loopback.base_url)
    replies = await asyncio.gather(*(model.complete(MESSAGES) for _ in range(5)))
    assert replies == ["ok"] * 5 and len(loopback.requests) == 5


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"model": ""}, "model"),
        ({"base_url": "file:///etc/passwd"}, "base_url"),
        ({"base_url": "ftp://example.com"}, "base_url"),
        ({"base_url": "localhost:8000/v1"}, "base_url"),
        ({"timeout": 0}, "timeout"),
        ({"timeout": True}, "timeout"),
    ],
)
def test_openai_adapter_config_is_validated(kwargs: dict[str, object], field: str) -> None:
    kwargs.setdefault("model", "m")
    with pytest.raises(UsageError) as info:
        OpenAIChatModel(**kwargs)  # type: ignore[arg-type]
    assert info.value.code == "E_INVALID_MODEL_CONFIG"
    assert info.value.field == field


def test_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("TURNKIT_MODEL", "OPENAI_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(UsageError, match="TURNKIT_MODEL") as exc_info:
        OpenAIChatModel.from_env()
    assert exc_info.value.code == "E_INVALID_MODEL_CONFIG"
    monkeypatch.setenv("OPENAI_MODEL", "fallback")
    assert OpenAIChatModel.from_env().model == "fallback"
    monkeypatch.setenv("TURNKIT_MODEL", "llama3")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    model = OpenAIChatModel.from_env(timeout=3)
    assert (model.model, model.base_url, model.timeout) == ("llama3", "http://127.0.0.1:11434/v1", 3.0)
    assert OpenAIChatModel.from_env(model="override").model == "override"
