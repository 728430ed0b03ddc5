"""Bytes to text: byte-order marks, UTF-8, an HTML page's declared charset, then the fallbacks.

A fallback is never taken on trust: charset-normalizer checks that the text a
codec gives reads as text (its "mess" measure), so Big5 bytes are refused
rather than stored as cp1252 mojibake. ``"auto"`` lets it pick the codec.
"""

from __future__ import annotations

import codecs
import functools
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ._errors import DocumentLoadError, IngestUsageError

if TYPE_CHECKING:
    from charset_normalizer import CharsetMatch

__all__ = ["AUTO_ENCODING", "check_fallback_encodings", "decode_text", "detector_version", "needs_fallback"]

AUTO_ENCODING = "auto"
"""The fallback name that lets the detector choose among every encoding it knows."""

_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)""", re.IGNORECASE)
# The most used legacy encodings, by the share of web pages in each; ties go to the earliest.
_COMMON = tuple("cp1252 latin_1 cp1251 shift_jis gb18030 gb2312 big5 euc_kr euc_jp cp1250".split())
_option_error = functools.partial(IngestUsageError, code="E_INGEST_INVALID_OPTION")
_REFUSED_HINT = (
    "Nothing was stored: a codec that does not fit would store mojibake. Name the file's real encoding "
    "(--fallback-encoding big5, fallback_encodings=['big5']), let the detector choose "
    "(--fallback-encoding auto), or save the file as UTF-8."
)


@functools.cache
def detector_version() -> str:
    """The detector and its version, part of the fingerprint of files read through a fallback."""
    import charset_normalizer

    return f"charset-normalizer=={charset_normalizer.__version__}"


def check_fallback_encodings(names: Sequence[str] | str | None) -> tuple[str, ...]:
    """The fallbacks to try, in order: codec names (as `codecs.lookup` spells them) and ``"auto"``.

    Raises:
        IngestUsageError: ``E_INGEST_INVALID_OPTION``: a name Python or the detector does not know, or
            UTF-16/32 without a BOM.
    """
    if names is None:
        return ()
    if isinstance(names, str):
        names = (names,)
    checked: list[str] = []
    for name in names:
        if isinstance(name, str) and name.strip().lower() == AUTO_ENCODING:
            checked.append(AUTO_ENCODING)
            continue
        from charset_normalizer.constant import IANA_SUPPORTED
        from charset_normalizer.utils import iana_name

        try:  # the detector must know it too: it checks that what a fallback reads is text
            codec = codecs.lookup(name).name
            known = iana_name(codec, strict=True) in IANA_SUPPORTED
        except (LookupError, TypeError, ValueError):
            known = False
        if not known:
            raise _option_error(
                f"Unknown text encoding {name!r}.",
                hint="Use 'auto' (detect it) or a codec name such as cp1252, latin-1, shift_jis or big5.",
            )
        if codec.startswith(("utf-16", "utf-32")):
            # They decode almost any even-length bytes into nonsense; a BOM already selects them.
            raise _option_error(
                f"{name!r} cannot be a fallback encoding.",
                hint="UTF-16 and UTF-32 files are read when they start with a byte-order mark.",
            )
        checked.append(codec)
    return tuple(dict.fromkeys(checked))


def _error(path: str, reason: str, hint: str | None = None) -> DocumentLoadError:
    return DocumentLoadError(
        f"Cannot decode {path!r}: {reason}.",
        code="E_INGEST_DECODE_FAILED",
        path=path,
        reason=reason,
        hint=hint,
    )


def _plain(data: bytes, *, path: str, html: bool) -> str | UnicodeDecodeError:
    """The text without any fallback, or the UTF-8 error when only a fallback could read it."""
    for bom, codec in _BOMS:
        if data.startswith(bom):
            try:
                return data.decode(codec)
            except UnicodeDecodeError as exc:
                raise _error(path, f"invalid {codec} at byte {exc.start}") from exc
    if b"\x00" in data[:8192]:
        raise _error(path, "it looks binary (contains NUL bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        utf8_error = exc
    if html:  # a page may declare a legacy charset; honour it before giving up
        declared = _META_CHARSET.search(data[:4096])
        if declared:
            charset = declared.group(1).decode("ascii")
            try:
                return data.decode(charset)
            except LookupError as exc:
                raise _error(path, f"unknown declared charset {charset!r}") from exc
            except UnicodeDecodeError as exc:
                raise _error(path, f"not valid {charset} at byte {exc.start}") from exc
    return utf8_error


def needs_fallback(data: bytes, *, html: bool) -> bool:
    """Whether only a fallback could decode ``data``: the fallback settings matter to it alone."""
    if data.isascii():
        return False
    try:
        return isinstance(_plain(data, path="", html=html), UnicodeDecodeError)
    except DocumentLoadError:  # undecodable whatever the fallbacks (a bad BOM or charset, NUL bytes)
        return False


def _rank(match: CharsetMatch) -> int:
    return min((_COMMON.index(c) for c in match.could_be_from_charset if c in _COMMON), default=len(_COMMON))


def _detect(data: bytes, fallbacks: Sequence[str]) -> str | None:
    from charset_normalizer import from_bytes

    for name in fallbacks:
        matches = list(from_bytes(data) if name == AUTO_ENCODING else from_bytes(data, cp_isolation=[name]))
        if not matches:
            continue
        # Short Western text reads equally well in several code pages (è or č); the common one wins a tie.
        top = matches[0]
        found = min((m for m in matches if (m.chaos, m.coherence) == (top.chaos, top.coherence)), key=_rank)
        try:
            return data.decode(found.encoding)
        except (LookupError, UnicodeDecodeError):
            continue
    return None


def decode_text(data: bytes, *, path: str, html: bool = False, fallbacks: Sequence[str] = ()) -> str:
    """Decode a text file's bytes (see the module docstring for the order).

    Raises:
        DocumentLoadError: ``E_INGEST_DECODE_FAILED``: binary data, or text no allowed encoding reads as text.
    """
    text = _plain(data, path=path, html=html)
    if isinstance(text, str):
        return text
    if not fallbacks:
        raise _error(path, f"not valid UTF-8 at byte {text.start}") from text
    decoded = _detect(data, fallbacks)
    if decoded is not None:
        return decoded
    tried = ", ".join(fallbacks)
    reason = f"not valid UTF-8 at byte {text.start}, and no fallback ({tried}) reads it as text"
    raise _error(path, reason, _REFUSED_HINT) from text
