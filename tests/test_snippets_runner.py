"""The docs-snippet runner itself: it runs blocks, and a wrong `#>` line fails."""

from __future__ import annotations

import pytest

from ._snippets import expected_output, python_blocks, run_snippet

PAGE = """
Intro.

```python
print("hello")
#> hello
```

  ```python
  for i in range(2):
      print(i)
      #> 0
  ```

```sh
echo not python
```
"""


def test_blocks_are_found_and_dedented() -> None:
    blocks = python_blocks(PAGE)
    assert blocks == ['print("hello")\n#> hello\n', "for i in range(2):\n    print(i)\n    #> 0\n"]


def test_right_output_lines_pass_and_output_is_returned() -> None:
    assert run_snippet('print("a")\nprint("b")\n#> a\n#> b\nprint("c")\n#> c\n') == "a\nb\nc\n"
    assert expected_output('print("a")\n#> a\n#> b\nx = 1\n#> c\n') == [["a", "b"], ["c"]]


def test_a_wrong_output_line_fails() -> None:
    with pytest.raises(AssertionError, match="do not match"):
        run_snippet('print("hello")\n#> goodbye\n')


def test_a_check_inside_a_loop_runs_each_time() -> None:
    # The first pass prints 0 and matches; the second prints 1 and must fail.
    with pytest.raises(AssertionError, match=r"\['0'\].*\['1'\]"):
        run_snippet(python_blocks(PAGE)[1])


def test_an_output_line_after_a_silent_statement_fails() -> None:
    with pytest.raises(AssertionError):
        run_snippet("x = 1\n#> 1\n")
    with pytest.raises(AssertionError):
        run_snippet('print("one")\n#> one\n#> two\n')  # more lines expected than printed


def test_an_error_in_a_snippet_propagates_with_its_line() -> None:
    with pytest.raises(ZeroDivisionError) as info:
        run_snippet("x = 1\ny = 1 / 0\n", name="<page#0>")
    assert info.traceback[-1].lineno == 1  # 0-based: the second line of the snippet
