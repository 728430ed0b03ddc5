"""One growing session written to memory, imported by a second process too (so only what it needs)."""

from __future__ import annotations

from google.adk.events import Event
from google.adk.sessions.session import Session
from google.genai import types

from turnkit.integrations.google_adk import TurnkitMemoryService

EVENTS = 6


async def add_as_it_grows(service: TurnkitMemoryService) -> None:
    """Add the session after each of its events, as an after-agent callback would."""
    events = [
        Event(
            id=f"e{i}",
            author="user",
            invocation_id="i",
            timestamp=1e9 + i,
            content=types.Content(role="user", parts=[types.Part(text=f"note {i} about oolong")]),
        )
        for i in range(EVENTS)
    ]
    for n in range(1, EVENTS + 1):
        await service.add_session_to_memory(
            Session(app_name="app", user_id="alice", id="s1", events=events[:n])
        )
