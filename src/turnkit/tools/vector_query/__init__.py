"""The vector query tool (Mastra-shaped); its public names are re-exported by ``turnkit.tools``.

- ``_create``: `create_vector_query_tool`, which checks the host's options once;
- ``_options``: `VectorQueryOptions`, the frozen host options, and their checks;
- ``_input``: the model's arguments (`VectorQueryInput`), their JSON Schema and validation;
- ``_tool``: `VectorQueryTool`, one call from arguments to result;
- ``_classify``: which errors a call shows the model, and as which kind.
"""
