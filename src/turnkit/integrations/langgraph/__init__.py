"""LangGraph adapter: `TurnkitStore`, a LangGraph ``BaseStore`` kept in a turnkit collection.

Needs ``turnkit[langgraph]`` (``langgraph``). See docs/integrations/langgraph.md.
Agents' long-term memory then lives in LanceDB (a directory, object storage or
LanceDB Cloud): durable, shared by processes, scoped by tenant, searchable by meaning.
"""

from ._store import TurnkitStore

__all__ = ["TurnkitStore"]
