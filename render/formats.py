"""Number and text formats shared by every chart, the saved tables and the report.

Only formatting: values arrive in the store's base units (ns, byte, FLOP, FLOP/s, byte/s) and leave as short text.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

#: a chart's title: one line, or several (Vega-Lite draws a list as lines: a long provenance wrapped)
ChartTitle = str | list[str] | None

if TYPE_CHECKING:  # imported by the two expressions: the text formats need no polars (start-up)
    import polars as pl

__all__ = [
    "NAME_CHARS",
    "char_escape",
    "duration",
    "flags_text",
    "runs_said",
    "share",
    "si",
    "significant",
    "truncate",
    "truncate_text",
]

#: Demangled names can exceed 1 kB; this many characters are shown.
NAME_CHARS = 80

_SI_PREFIXES = ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def si(value: float, unit: str) -> str:
    """``si(2.0386e12, 'B/s')`` -> ``'2.04 TB/s'``: 3 significant digits and an SI prefix (k to E)."""
    for factor, prefix in _SI_PREFIXES:
        if abs(value) >= factor * 0.9995:
            return f"{value / factor:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def significant(x: float, digits: int = 3) -> str:
    """``x`` to ``digits`` significant digits, never an exponent from 1 up (``1234.5`` -> ``'1235'``, ``0.5`` ->
    ``'0.5'``, ``1e-7`` -> ``'1e-07'``)."""
    text = f"{x:.{digits}g}"
    return f"{x:.0f}" if "e+" in text else text


def duration(ns: float | None, digits: int = 4) -> str:
    """A duration in ns as text with ``digits`` significant digits in s, ms, µs or ns, the unit the rounded value
    reads in (999.96 ns is ``'1 µs'``, not ``'1000 ns'``); ``'n/a'`` for None or NaN."""
    if ns is None or (isinstance(ns, float) and math.isnan(ns)):
        return "n/a"
    edge = 1 - 0.5 * 10.0**-digits  # a value that rounds up to the next unit is written in it
    for factor, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "µs")):
        if abs(ns) >= factor * edge:
            return f"{significant(ns / factor, digits)} {unit}"
    return f"{significant(ns, digits)} ns"


def share(x: float | None) -> str:
    """A fraction 0..1 as a percentage with one decimal (``'12.5 %'``); ``'n/a'`` for None or NaN."""
    return "n/a" if x is None or math.isnan(x) else f"{100 * x:.1f} %"


def truncate(expr: pl.Expr, n: int = NAME_CHARS) -> pl.Expr:
    """A string expression cut to ``n`` characters, the last one an ellipsis where it was cut."""
    import polars as pl

    return pl.when(expr.str.len_chars() > n).then(expr.str.slice(0, n - 1) + "…").otherwise(expr)


def runs_said(run_ids: set[str]) -> str:
    """``"run A, B: "``, the sorted ``run_ids`` that open a message about their rows; ``""`` for none (a message
    about no rows names no run)."""
    return f"run {', '.join(sorted(run_ids))}: " if run_ids else ""


# character-class bodies (for ``re.compile(f"[{...}]")``) of the characters a report's text is shown without, as
# :func:`char_escape` writes them: those XML 1.0 cannot hold (the C0 controls but TAB, LF and CR, U+FFFE/U+FFFF,
# lone surrogates), and the bidirectional controls that reorder what a terminal or page shows
NOT_XML = r"\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff"
BIDI = r"\u200e\u200f\u202a-\u202e\u2066-\u2069"


def char_escape(match: re.Match[str]) -> str:
    """The escape that shows the one character ``match`` holds as text (``\\x1b``, ``\\u202e``): what terminal
    tables (:func:`rooflake.cli.output.printable`), PNG/SVG charts (:func:`rooflake.render.engine.xml_safe`) and
    HTML pages (:func:`rooflake.render.page.text`) write for a control character of a kernel name or an NVTX text.
    Use as ``pattern.sub(char_escape, text)``."""
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def truncate_text(s: str | None, n: int = NAME_CHARS) -> str:
    """:func:`truncate` for one Python string (None -> ``''``)."""
    s = s or ""
    return s if len(s) <= n else s[: n - 1] + "…"


def flags_text(dtype: pl.DataType | None = None) -> pl.Expr:
    """The ``flags`` column (list of str; ``dtype`` another type: cast to text) as one comma-separated string,
    ``''`` for none."""
    import polars as pl

    if dtype is not None and not isinstance(dtype, pl.List):
        return pl.col("flags").cast(pl.String).fill_null("")
    return pl.col("flags").cast(pl.List(pl.String)).list.join(", ").fill_null("")
