"""How deeply a JSON text nests, measured before a parser sees it.

A parser that recurses per nesting level can be crashed by a small file of brackets (orjson 3.8 segfaults near
140k levels; the standard library raises RecursionError). This measures the depth with C-speed byte operations
and numpy, so it is cheap enough to run on every record and every document.
"""

from __future__ import annotations

import numpy as np

_ESCAPED_BACKSLASH = b"\\\\"
_ESCAPED_QUOTE = b'\\"'
_STRUCTURE = b'"[]{}'
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in _STRUCTURE)
_QUOTE, _OPEN_ARRAY, _CLOSE_ARRAY, _OPEN_OBJECT, _CLOSE_OBJECT = _STRUCTURE
_SCAN_BYTES = 1 << 20


def too_deep(text: bytes, limit: int) -> bool:
    """True when ``text`` nests deeper than ``limit`` arrays/objects (brackets inside strings do not count)."""
    if text.count(b"[") + text.count(b"{") <= limit:
        return False  # the common case: a qlog record has a few dozen brackets at most
    return max_depth(text, stop_above=limit) > limit


def max_depth(text: bytes, stop_above: int | None = None) -> int:
    """The deepest nesting of ``text``; stops early once it exceeds ``stop_above``."""
    # Escapes first (an escaped backslash cannot escape the quote after it), then everything but quotes and
    # brackets goes: a quarter of a qlog's bytes are left, and a bracket is inside a string when an odd number
    # of quotes comes before it.
    if b"\\" in text:
        text = text.replace(_ESCAPED_BACKSLASH, b"").replace(_ESCAPED_QUOTE, b"")
    structure = text.translate(None, _NOT_STRUCTURE)
    depth = deepest = quotes = 0
    for start in range(0, len(structure), _SCAN_BYTES):
        codes = np.frombuffer(structure, np.uint8, count=min(_SCAN_BYTES, len(structure) - start), offset=start)
        is_quote = codes == _QUOTE
        outside = ((quotes + np.cumsum(is_quote)) & 1) == 0
        steps = (codes == _OPEN_ARRAY).astype(np.int8) + (codes == _OPEN_OBJECT)
        steps -= (codes == _CLOSE_ARRAY).astype(np.int8) + (codes == _CLOSE_OBJECT)
        levels = depth + np.cumsum(steps * outside, dtype=np.int64)
        deepest = max(deepest, int(levels.max()))
        depth = int(levels[-1])
        quotes += int(is_quote.sum())
        if stop_above is not None and deepest > stop_above:
            break
    return deepest
