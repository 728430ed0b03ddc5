"""Framework adapters, one module per framework, each behind its own extra.

- `turnkit.integrations.pydantic_ai` (``turnkit[pydantic-ai]``)
- `turnkit.integrations.langchain` (``turnkit[langchain]``)
- `turnkit.integrations.langgraph` (``turnkit[langgraph]``): a LangGraph store
- `turnkit.integrations.llamaindex` (``turnkit[llamaindex]``)
- `turnkit.integrations.openai_agents` (``turnkit[openai-agents]``)
- `turnkit.integrations.google_adk` (``turnkit[adk]``; its own venv, see docs/integrations/google-adk.md)

This package imports no framework; import the module of the one you use.
See docs/integrations/index.md.
"""

__all__: list[str] = []
