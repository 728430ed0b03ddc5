r"""A small grammar for Vertex-style ``metadata_filter`` strings.

```
expression := or
or         := and ("OR" and)*
and        := unary ("AND" unary)*
unary      := "NOT" unary | "(" or ")" | "TRUE" | "FALSE" | predicate
predicate  := field ( cmp value
                    | ["NOT"] "IN" "(" [value ("," value)* [","]] ")"
                    | ["NOT"] "LIKE" string
                    | ["NOT"] "CONTAINS" value
                    | ["NOT"] "EXISTS"
                    | "IS" ["NOT"] "NULL" )
cmp        := "=" | "==" | "!=" | "<>" | "<" | "<=" | ">" | ">="
field      := name ("." name)*        name: [A-Za-z_][A-Za-z0-9_-]* or `backticked`
value      := string | number | "TRUE" | "FALSE" | "NULL"
```

Keywords are case-insensitive. Strings take double or single quotes with
JSON-style backslash escapes (``\" \' \\ \/ \n \t \r \b \f \uXXXX``);
``\%`` and ``\_`` are kept as written so LIKE patterns read naturally.
The text is tokenized and parsed into the filter tree; it never reaches
LanceDB as SQL.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from turnkit.batteries.vector._errors import InvalidFilterError
from turnkit.batteries.vector.filters._ast import And, FilterNode, Or
from turnkit.batteries.vector.filters._build import located
from turnkit.batteries.vector.filters._core import and_, condition, not_, or_
from turnkit.batteries.vector.filters._fields import MISSING, with_prefix

__all__ = ["MAX_EXPRESSION_LENGTH", "parse_filter_expression"]

MAX_EXPRESSION_LENGTH: Final = 20_000
"""Longest filter expression accepted, in characters."""

_KEYWORDS: Final = frozenset(
    {"and", "or", "not", "in", "like", "contains", "exists", "is", "null", "true", "false"}
)
_CMP_OPS: Final = ("==", "!=", "<>", "<=", ">=", "=", "<", ">")
_NAME_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_SEGMENT_RE: Final = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*")
_NUMBER_RE: Final = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_ESCAPES: Final = {
    '"': '"',
    "'": "'",
    "\\": "\\",
    "/": "/",
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "b": "\b",
    "f": "\f",
    "%": "\\%",  # LIKE escapes are kept for the pattern
    "_": "\\_",
}
_UNICODE_ESCAPE_RE: Final = re.compile(r"\\u([0-9a-fA-F]{4})")
_HINT: Final = (
    'Example: kind = "faq" AND year >= 2020 AND NOT (tag IN ("a", "b") OR title LIKE "draft%"). '
    "Strings are quoted; combine conditions with AND, OR, NOT and parentheses."
)


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # name, qname, string, number, op, "(", ")", ",", ".", end
    text: str  # source text (names, ops) or the decoded string
    col: int  # 1-based column of the first character
    value: Any = None  # the number, for number tokens


def _error(col: int, detail: str, hint: str = _HINT) -> InvalidFilterError:
    return InvalidFilterError(f"Invalid filter expression at column {col}: {detail}", hint=hint, position=col)


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        col = i + 1
        if ch.isspace():
            i += 1
            continue
        after_dot = bool(tokens) and tokens[-1].kind == "."
        if ch in "(),.":
            tokens.append(_Token(ch, ch, col))
            i += 1
        elif ch in "\"'":
            value, i = _read_string(text, i)
            tokens.append(_Token("string", value, col))
        elif ch == "`":
            end = text.find("`", i + 1)
            if end < 0:
                raise _error(col, "unterminated `backticked` name.")
            tokens.append(_Token("qname", text[i + 1 : end], col))
            i = end + 1
        elif (match := (_SEGMENT_RE if after_dot else _NAME_RE).match(text, i)) is not None:
            # After a '.', a key may start with a digit (metadata.2021).
            tokens.append(_Token("name", match.group(), col))
            i = match.end()
        elif (ch.isdigit() or ch == "-") and (match := _NUMBER_RE.match(text, i)) is not None:
            literal = match.group()
            if match.end() < n and (text[match.end()].isalnum() or text[match.end()] in "._"):
                raise _error(col, f"malformed number starting {text[i : match.end() + 1]!r}.")
            is_int = not any(c in literal for c in ".eE")
            tokens.append(_Token("number", literal, col, int(literal) if is_int else float(literal)))
            i = match.end()
        else:
            op = next((op for op in _CMP_OPS if text.startswith(op, i)), None)
            if op is None:
                raise _error(col, f"unexpected character {ch!r}.")
            tokens.append(_Token("op", op, col))
            i += len(op)
    tokens.append(_Token("end", "", n + 1))
    return tokens


def _read_string(text: str, start: int) -> tuple[str, int]:
    quote = text[start]
    out: list[str] = []
    i = start + 1
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == quote:
            return "".join(out), i + 1
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        if i + 1 >= n:
            break
        esc = text[i + 1]
        if esc in _ESCAPES:
            out.append(_ESCAPES[esc])
            i += 2
        elif esc == "u":
            code, i = _read_unicode_escape(text, i)
            out.append(code)
        else:
            raise _error(
                i + 1,
                f"unknown escape '\\{esc}' in a string.",
                "Escapes are \\\" \\' \\\\ \\/ \\n \\t \\r \\b \\f \\uXXXX (and \\% \\_ in LIKE patterns).",
            )
    raise _error(start + 1, f"unterminated string (missing closing {quote}).")


def _read_unicode_escape(text: str, i: int) -> tuple[str, int]:
    r"""Decode ``\uXXXX`` at ``text[i]`` (a surrogate pair when two follow each other)."""
    if (high := _UNICODE_ESCAPE_RE.match(text, i)) is None:
        raise _error(i + 1, "\\u needs four hex digits.")
    code = int(high[1], 16)
    low = _UNICODE_ESCAPE_RE.match(text, high.end())
    if 0xD800 <= code < 0xDC00 and low is not None and 0xDC00 <= (second := int(low[1], 16)) < 0xE000:
        return chr(0x10000 + ((code - 0xD800) << 10) + (second - 0xDC00)), low.end()
    if 0xD800 <= code < 0xE000:
        raise _error(i + 1, "\\u escape is a lone surrogate.", "Write the character itself, or a valid pair.")
    return chr(code), high.end()


class _Parser:
    def __init__(self, tokens: list[_Token], field_prefix: str, max_depth: int, max_nodes: int) -> None:
        self.tokens = tokens
        self.pos = 0
        self.field_prefix = field_prefix
        self.max_depth = max_depth
        self.max_nodes = max_nodes
        self.nodes = 0

    # -- token helpers
    @property
    def tok(self) -> _Token:
        return self.tokens[self.pos]

    def is_keyword(self, word: str) -> bool:
        return self.tok.kind == "name" and self.tok.text.lower() == word

    def advance(self) -> _Token:
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def expect_keyword(self, word: str, context: str) -> _Token:
        if not self.is_keyword(word):
            raise _error(self.tok.col, f"expected {word.upper()} {context}, found {_show(self.tok)}.")
        return self.advance()

    def count(self, col: int) -> None:
        self.nodes += 1
        if self.nodes > self.max_nodes:
            raise _error(
                col,
                f"more than {self.max_nodes} conditions and groups.",
                "Simplify the filter, e.g. use IN (...) instead of many ORs.",
            )

    def deeper(self, depth: int, col: int) -> int:
        if depth + 1 > self.max_depth:
            raise _error(col, f"nested deeper than {self.max_depth} levels.", "Flatten the filter.")
        return depth + 1

    # -- grammar
    def parse(self) -> FilterNode:
        if self.tok.kind == "end":
            return And(())
        node = self.parse_or(1)
        if self.tok.kind != "end":
            raise _error(self.tok.col, f"expected AND, OR or the end, found {_show(self.tok)}.")
        return node

    def parse_or(self, depth: int) -> FilterNode:
        return or_(*self.parse_chain("or", self.parse_and, depth))

    def parse_and(self, depth: int) -> FilterNode:
        return and_(*self.parse_chain("and", self.parse_unary, depth))

    def parse_chain(self, keyword: str, operand: Callable[[int], FilterNode], depth: int) -> list[FilterNode]:
        """``operand (keyword operand)*``: the operands; a chain of two or more counts as one condition."""
        first = self.tok
        parts = [operand(depth)]
        while self.is_keyword(keyword):
            self.advance()
            parts.append(operand(depth))
        if len(parts) > 1:
            self.count(first.col)
        return parts

    def parse_unary(self, depth: int) -> FilterNode:
        token = self.tok
        if self.is_keyword("not"):
            self.advance()
            self.count(token.col)
            return not_(self.parse_unary(self.deeper(depth, token.col)))
        if token.kind == "(":
            self.advance()
            node = self.parse_or(self.deeper(depth, token.col))
            if self.tok.kind != ")":
                raise _error(
                    self.tok.col,
                    f"expected ')' to close the '(' at column {token.col}, found {_show(self.tok)}.",
                )
            self.advance()
            return node
        if self.is_keyword("true") or self.is_keyword("false"):
            self.advance()
            return And(()) if token.text.lower() == "true" else Or(())
        return self.parse_predicate()

    def parse_field(self) -> tuple[str, int]:
        token = self.tok
        if token.kind == "name" and token.text.lower() in _KEYWORDS:
            raise _error(
                token.col,
                f"expected a field name, found the keyword {token.text.upper()}.",
                "Quote a field named like a keyword with backticks: `in` = 1.",
            )
        if token.kind not in ("name", "qname"):
            raise _error(token.col, f"expected a field name or '(', found {_show(token)}.")
        segments = [self.advance().text]
        while self.tok.kind == ".":
            self.advance()
            if self.tok.kind not in ("name", "qname"):
                raise _error(self.tok.col, f"expected a key after '.', found {_show(self.tok)}.")
            segments.append(self.advance().text)
        return with_prefix(".".join(segments), self.field_prefix), token.col

    def parse_predicate(self) -> FilterNode:
        field, col = self.parse_field()
        self.count(col)
        token = self.tok
        negate = False
        if token.kind == "op":
            self.advance()
            op, value = token.text, self.parse_value(f"after {token.text}")
        elif self.is_keyword("is"):
            self.advance()
            op, value = "eq", None
            if self.is_keyword("not"):
                self.advance()
                op = "ne"
            self.expect_keyword("null", "after IS")
        else:
            if self.is_keyword("not"):
                self.advance()
                negate = True
                if not any(self.is_keyword(w) for w in ("in", "like", "contains", "exists")):
                    raise _error(
                        self.tok.col,
                        f"expected IN, LIKE, CONTAINS or EXISTS after NOT, found {_show(self.tok)}.",
                    )
            op = self.tok.text.lower() if self.tok.kind == "name" else ""
            if op not in ("in", "like", "contains", "exists"):
                raise _error(
                    token.col,
                    f"expected a comparison (= != < <= > >=, IN, LIKE, CONTAINS, EXISTS, IS NULL) after "
                    f"{field.removeprefix(self.field_prefix)!r}, found {_show(token)}.",
                )
            self.advance()
            if op == "in":  # NOT IN is the operator nin, not a negated IN
                op, negate, value = "nin" if negate else "in", False, self.parse_list()
            elif op == "like":
                if self.tok.kind != "string":
                    raise _error(self.tok.col, f"LIKE needs a quoted pattern, found {_show(self.tok)}.")
                value = self.advance().text
            else:
                value = self.parse_value("after CONTAINS") if op == "contains" else MISSING
        where = f"At column {col} of the filter expression"
        node = located(lambda: condition(field, op, value), where, position=col)
        return not_(node) if negate else node

    def parse_list(self) -> list[Any]:
        if self.tok.kind != "(":
            raise _error(self.tok.col, f"IN needs a parenthesized list, found {_show(self.tok)}.")
        self.advance()
        values: list[Any] = []
        while self.tok.kind != ")":
            values.append(self.parse_value("in the IN list"))
            if self.tok.kind == ",":
                self.advance()
            elif self.tok.kind != ")":
                raise _error(self.tok.col, f"expected ',' or ')' in the IN list, found {_show(self.tok)}.")
        self.advance()
        return values

    def parse_value(self, context: str) -> Any:
        token = self.tok
        if token.kind == "string":
            self.advance()
            return token.text
        if token.kind == "number":
            self.advance()
            return token.value
        if token.kind == "name" and token.text.lower() in ("true", "false", "null"):
            self.advance()
            return {"true": True, "false": False, "null": None}[token.text.lower()]
        hint = _HINT
        if token.kind in ("name", "qname"):
            hint = (
                f'Quote text values: "{token.text}". Values are quoted strings, numbers, true, false or null.'
            )
        raise _error(token.col, f"expected a value {context}, found {_show(token)}.", hint)


def _show(token: _Token) -> str:
    if token.kind == "end":
        return "the end of the expression"
    if token.kind == "string":
        return f"the string {token.text[:30]!r}"
    return repr(token.text[:30])


def parse_filter_expression(
    text: str, *, field_prefix: str = "metadata.", max_depth: int = 32, max_nodes: int = 200
) -> FilterNode:
    """Parse a text filter such as ``kind = "faq" AND year >= 2020`` into a filter tree.

    Comparisons ``= != < <= > >=``, ``[NOT] IN (...)``, ``[NOT] LIKE "pat"``,
    ``[NOT] CONTAINS value``, ``[NOT] EXISTS``, ``IS [NOT] NULL``, combined
    with ``NOT`` > ``AND`` > ``OR`` (that precedence) and parentheses; see the
    module docstring for the grammar. Semantics are those of the other filter
    forms (``docs/filters.md``). An empty text is the always-true filter.

    Args:
        text: The expression.
        field_prefix: Prepended to every field name that does not already
            start with it. The default lets names reach metadata keys only
            (``id`` means ``metadata.id``; ``kind`` and ``metadata.kind`` both
            mean ``metadata.kind``); pass ``""`` to address the columns too
            (``id``, ``document``, ``created_at``, ``updated_at``; any other
            name is a metadata key).
        max_depth: Deepest nesting of parentheses and NOT allowed.
        max_nodes: Most conditions and groups allowed.

    Returns:
        The filter tree.

    Raises:
        InvalidFilterError: Unparsable text, a bad value or a limit exceeded;
            the message gives the 1-based column (also as ``.position``).
        UnknownFieldError: A field that is not a column or a metadata path
            (unknown operators are syntax errors, so `InvalidFilterError`).
    """
    if not isinstance(text, str):
        raise InvalidFilterError(
            f"A filter expression must be a string, not {type(text).__name__}.", hint=_HINT
        )
    if len(text) > MAX_EXPRESSION_LENGTH:
        raise InvalidFilterError(
            f"The filter expression is longer than {MAX_EXPRESSION_LENGTH} characters.", hint=_HINT
        )
    if "\x00" in text:
        raise _error(text.index("\x00") + 1, "NUL character in the expression.")
    if field_prefix and not field_prefix.endswith("."):
        raise InvalidFilterError(
            f"field_prefix must end with '.', got {field_prefix!r}.", hint="Use '' or 'metadata.'."
        )
    try:
        return _Parser(_tokenize(text), field_prefix, max_depth, max_nodes).parse()
    except RecursionError:
        raise InvalidFilterError(
            "The filter expression is nested too deeply to parse.",
            hint="Lower the nesting of parentheses and NOT.",
        ) from None
