"""Text from reports into HTML pages, escaped: every string a page shows or embeds came from a profile (kernel
names, NVTX ranges, labels, file names) and may hold markup.

- In HTML text and attributes: :func:`html.escape` (``& < > " '``), after every control character is written as
  its escape (``\\x1b``, ``\\u202e``) as terminals and charts show it (:func:`rooflake.render.formats.char_escape`):
  the C0 controls but TAB, LF and CR (which HTML shows as a space), DEL, the C1 controls, the bidirectional
  controls that reorder what a page shows, U+FFFE/U+FFFF and lone surrogates (not characters HTML holds).
- In a ``<script>`` block (a Vega-Lite spec as JSON): :func:`script_json`, JSON whose ``<``, ``>``, ``&``, U+2028
  and U+2029 are written as ``\\u003c``-style escapes, so no ``</script>`` or ``<!--`` can end or change the
  block, and the JSON still parses to the same values (OWASP's rule for JSON in a script element; Django's
  ``json_script`` does the same).
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

from rooflake.render.formats import BIDI, NOT_XML, char_escape

__all__ = ["ScriptJSONEncoder", "script_json", "text"]

_SCRIPT_ESCAPES = {
    ord("<"): "\\u003c",
    ord(">"): "\\u003e",
    ord("&"): "\\u0026",
    0x2028: "\\u2028",
    0x2029: "\\u2029",
}


class ScriptJSONEncoder(json.JSONEncoder):
    """A JSON encoder whose output is safe inside an HTML ``<script>`` element (see the module docstring).

    ``<``, ``>`` and ``&`` occur in JSON text only inside strings, where their ``\\u`` escapes mean the same
    characters, so the escaping changes no value."""

    def encode(self, o: Any) -> str:
        return super().encode(o).translate(_SCRIPT_ESCAPES)

    def iterencode(self, o: Any, _one_shot: bool = False) -> Any:
        for chunk in super().iterencode(o, _one_shot):
            yield chunk.translate(_SCRIPT_ESCAPES)


def script_json(obj: Any) -> str:
    """``obj`` as JSON safe to embed in a ``<script>`` element (``json.dumps`` with :class:`ScriptJSONEncoder`)."""
    return json.dumps(obj, cls=ScriptJSONEncoder)


# the characters :func:`text` writes as escapes (see the module docstring)
_CONTROL = re.compile(f"[{NOT_XML}\\x7f-\\x9f{BIDI}]")


def text(value: Any) -> str:
    """``str(value)`` escaped for HTML text or a quoted attribute: control characters as their escapes, then
    ``html.escape`` with quotes (the module docstring)."""
    return html.escape(_CONTROL.sub(char_escape, str(value)), quote=True)
