"""What reaches a terminal from data (file names, instance names, query results, error messages) is shown as
text, never obeyed: control characters (a newline that would print a second, fake `error:` line, escape
sequences, NUL) and Unicode's bidirectional controls (right-to-left overrides that reorder what a person reads)
are written as visible escapes (`\\n`, `\\x1b`, `\\u202e`); everything else is kept as it is."""

from __future__ import annotations

import unicodedata

# Unicode's bidirectional formatting characters (UAX #9): embeddings, overrides, isolates and the implicit marks.
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(character: str) -> str:
    if character in NAMED:
        return NAMED[character]
    code = ord(character)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def needs_escape(character: str) -> bool:
    return character in BIDI_CONTROLS or unicodedata.category(character) in ("Cc", "Cs", "Zl", "Zp")


def printable(text: str, keep_tabs: bool = False) -> str:
    """`text` with every control and bidirectional character written as a visible escape (one line)."""
    if text.isprintable():  # the common case, fast (str.isprintable is False for every character escaped here)
        return text
    return "".join(_escaped(c) if needs_escape(c) and not (keep_tabs and c == "\t") else c for c in text)
