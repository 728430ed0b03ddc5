"""The docs pages' Python snippets run, print what their `#>` lines say; the example works."""

import contextlib
import importlib.util
import inspect
import io

import pytest

import turnkit.mcp
import turnkit.tools

from .._snippets import ROOT, python_blocks, run_snippet

# The docs pages' snippets run with every other page in tests/test_docs.py.


def snippets():
    return [
        pytest.param(code, id=f"{module.__name__}#{i}")
        for module in (turnkit.tools, turnkit.mcp)
        for i, code in enumerate(python_blocks(module.__doc__))
    ]


def test_the_module_docstrings_have_snippets():
    assert len(snippets()) >= 2


@pytest.mark.parametrize("code", snippets())
def test_snippet_runs_and_prints_what_it_says(code):
    run_snippet(code, name="<docstring>")


def test_public_names():
    assert turnkit.tools.__all__ == sorted(turnkit.tools.__all__)
    assert turnkit.mcp.__all__ == sorted(turnkit.mcp.__all__)
    for module in (turnkit.tools, turnkit.mcp):
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                assert (obj.__doc__ or "").strip(), name


def test_import_turnkit_does_not_import_mcp_or_tools():
    import subprocess
    import sys

    code = (
        "import sys, turnkit; "
        "print('mcp' in sys.modules, 'turnkit.tools' in sys.modules, 'lancedb' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False", "False"]
    code = "import sys, turnkit.tools; print('mcp' in sys.modules, 'lancedb' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_tool_calling_loop_example():
    spec = importlib.util.spec_from_file_location(
        "tool_calling_loop", ROOT / "examples" / "tool_calling_loop.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with contextlib.redirect_stdout(io.StringIO()):
        messages = module.main()
    roles = [m["role"] for m in messages]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    first_error = turnkit.tools.VectorQueryResult.model_validate_json(messages[2]["content"])
    assert first_error.status == "error" and first_error.error.kind == "invalid_input"
    found = turnkit.tools.VectorQueryResult.model_validate_json(messages[4]["content"])
    assert found.status == "ok" and found.sources[0].id == "refunds"
    assert all(s.metadata["kind"] == "faq" for s in found.sources)
    assert messages[-1]["content"] == (
        "Refunds are paid to the original card within 5 business days. (source: handbook.pdf, p. 4)"
    )
