"""Writing result tables for the CLI: an aligned text table, Markdown, CSV, JSON or Parquet, to stdout or a file.

Text for a terminal (the table and Markdown formats) shows control characters escaped (:func:`printable`): NVTX
text and kernel names come from the profiled program, and an ESC, OSC, BEL or CR in them must not drive the
terminal. CSV, JSON and Parquet are data and stay faithful. Files are written by the rule of
:mod:`rooflake.render.files` (parents created, atomic, :class:`rooflake.schema.OutputError` naming the path).
"""

from __future__ import annotations

import datetime
import json
import math
import re
import string
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from rooflake.render.files import write_file
from rooflake.render.formats import BIDI, char_escape
from rooflake.schema import UsageError
from rooflake.schema.duck import TIMESTAMPTZ, Rows

# imported where used: a terminal table needs no pyarrow when it comes as Rows, and no command loads polars here
if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "Column",
    "columns_of",
    "csv_field",
    "draw",
    "fit_widths",
    "format_float",
    "human",
    "printable",
    "render_markdown",
    "render_rows",
    "render_table",
    "render_text",
    "terminal_width",
    "unit_of",
    "write_table",
    "write_view",
]

# C0 controls (TAB, LF and CR too: one row, one line), DEL, C1 controls (0x9b is CSI on some terminals), the line
# and paragraph separators, and the bidirectional controls that can reorder what a terminal shows
_CONTROL = re.compile(rf"[\x00-\x1f\x7f-\x9f\u2028\u2029{BIDI}]")


def printable(text: str) -> str:
    """``text`` with every control character written as its escape (``\\x1b``, ``\\x07``, ``\\x0d``, ``\\u202e``), so
    that it shows as it is and does nothing to the terminal; other characters unchanged."""
    return _CONTROL.sub(char_escape, text)


def _plain(v: Any) -> Any:
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return str(v)
    if isinstance(v, list):
        if v and isinstance(v[0], tuple) and len(v[0]) == 2:  # Arrow map -> list of (key, value)
            return {k: _plain(x) for k, x in v}
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if hasattr(v, "isoformat"):
        return v.isoformat()
    return v


# The terminal table looks as polars printed it before (importing polars for it cost 0.15 s of each
# `rl sql`, pyarrow 0.1 s more): polars' UTF8_FULL_CONDENSED borders, cells left-aligned, every row and column, and
# values formatted by polars' rules (polars-core fmt.rs: fmt_float, fmt_list, fmt_struct, format_blob; chrono's
# date-times). tests/test_output_paths.py checks the two agree on every kind of value.
STR_LIMIT = 80  # characters of a cell shown before "…" (polars' fmt_str_lengths as the CLI set it)
LIST_LIMIT = 3  # items of a list or map shown (polars' fmt_table_cell_list_len)
SCIENTIFIC_BOUND = 999999.0


def _shortest(v: float) -> str:
    """Rust's ``{}`` of an f64: the shortest digits that read back, never an exponent, no ``.0``."""
    text = repr(v)
    if "e" in text:
        text = format(Decimal(text), "f")
    return text[:-2] if text.endswith(".0") else text


def _exp(v: float, digits: int | None = None) -> str:
    """Rust's ``{:e}`` (shortest digits: ``1.2693101e7``) or ``{:.4e}`` (``3.4360e10``, ``-1.0000e-7``)."""
    if digits is not None:
        mantissa, power = f"{v:.{digits}e}".split("e")
        return f"{mantissa}e{int(power)}"
    sign, ds, exp = Decimal(repr(v)).normalize().as_tuple()
    assert isinstance(exp, int)  # finite: the callers handle NaN and infinities
    text = "".join(map(str, ds))
    mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
    return f"{'-' if sign else ''}{mantissa}e{exp + len(text) - 1}"


def format_float(v: float) -> str:
    """A float as polars prints it in a table: ``6234.0``, ``0.3``, ``0.997483`` (6 decimals, zeros trimmed),
    ``1.2693101e7``, ``3.4360e10`` (4 decimals beyond 999999 or below 1e-6), ``NaN``, ``inf``."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    whole = v.is_integer()
    if whole and abs(v) < SCIENTIFIC_BOUND:
        return f"{v:.1f}"
    if len(_shortest(v)) > 9:
        if not 0.000001 <= abs(v) <= SCIENTIFIC_BOUND:
            return _exp(v, 4)
        text = f"{v:.6f}".rstrip("0")
        return text + "0" if text.endswith(".") else text
    return _exp(v) if whole else _shortest(v)


def _fraction(micro: int) -> str:
    """chrono's fraction of a second: none, milliseconds or microseconds, as few as show the value."""
    if micro == 0:
        return ""
    return f".{micro // 1000:03d}" if micro % 1000 == 0 else f".{micro:06d}"


def _blob(v: bytes) -> str:
    shown = "".join(
        chr(b) if chr(b).isascii() and (chr(b).isalnum() or chr(b) in string.punctuation) else f"\\x{b:02x}"
        for b in v[: STR_LIMIT * 2]
    )
    return f'b"{shown}' + ('"…' if len(v) > STR_LIMIT * 2 else '"')


def _value(v: Any, nested: bool = False) -> str:
    """One value as polars prints it (inside a list or struct: strings quoted); a dict is a struct (its values
    shown), a :class:`_Map` a map (``{"k": "v", …}``)."""
    if v is None:
        return "null"
    if isinstance(v, str):
        return f'"{v}"' if nested else v
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return format_float(v)
    if isinstance(v, Decimal):
        return format(v, "f")
    if isinstance(v, datetime.datetime):
        text = f"{v.year:04d}-{v.month:02d}-{v.day:02d} {v:%H:%M:%S}{_fraction(v.microsecond)}"
        return text + f" {v.tzname()}" if v.tzinfo is not None else text
    if isinstance(v, datetime.time):
        return f"{v:%H:%M:%S}{_fraction(v.microsecond)}"
    if isinstance(v, bytes):
        return _blob(v)
    if isinstance(v, _Map):
        items = [f"{_value(k, True)}: {_value(x, True)}" for k, x in list(v.items())[:LIST_LIMIT]]
        return "{" + ", ".join(items + (["…"] if len(v) > LIST_LIMIT else [])) + "}"
    if isinstance(v, dict):
        return "{" + ",".join(_value(x, True) for x in v.values()) + "}"
    if isinstance(v, list | tuple):
        if len(v) > LIST_LIMIT:
            head = ", ".join(_value(x, True) for x in v[: LIST_LIMIT - 1])
            return f"[{head}, … {_value(v[-1], True)}]"
        return "[" + ", ".join(_value(x, True) for x in v) + "]"
    return str(v)


class _Map(dict):  # type: ignore[type-arg]
    """A map value (shown with its keys), as opposed to a struct (a plain dict: its values only)."""


def _cell(v: Any) -> str:
    if type(v) is int:  # the common cases first: a table of 100,000 rows is printed in about a second
        return str(v)
    if type(v) is float:
        return format_float(v)
    text = printable(v if type(v) is str else _value(v))
    return text[:STR_LIMIT] + "…" if len(text) > STR_LIMIT else text


def _width(text: str) -> int:
    """Columns ``text`` takes on a terminal: East Asian wide characters 2, combining marks 0."""
    if text.isascii():
        return len(text)
    import unicodedata

    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text
    )


def _grid(names: list[str], columns: list[list[Any]], width: int | None = None) -> str:
    """The bordered table of ``columns`` (values) under ``names``, fitted to ``width`` (:func:`fit_widths`; None:
    as wide as its cells)."""
    if not names:
        return "┌┐\n╞╡\n└┘"
    cells = [[printable(n)] + [_cell(v) for v in col] for n, col in zip(names, columns, strict=True)]
    return draw(cells, width)


def draw(
    cells: list[list[str]],
    width: int | None = None,
    right: Sequence[bool] | None = None,
    shrink: Sequence[bool] | None = None,
    cut_start: Sequence[bool] | None = None,
) -> str:
    """The bordered table of ``cells`` (one list per column, its header first; text already escaped), each column
    left- or (``right``) right-aligned, fitted to ``width`` by :func:`fit_widths` (``shrink``: the columns that give
    way first, default all): a cut cell ends in ``…`` (``cut_start``: begins with it, keeping a path's leaf), and columns that do not fit even then are left out behind a
    ``…`` column and a line naming them."""
    n = len(cells)
    natural = [max(map(_width, col)) for col in cells]
    heads = [_width(col[0]) for col in cells]
    widths = fit_widths(natural, list(shrink) if shrink is not None else [True] * n, width, heads)
    hidden = [col[0] for col in cells[len(widths) :]]
    starts = list(cut_start) if cut_start is not None else [False] * n
    shown = [[clip(c, w, st) for c in col] for col, w, st in zip(cells, widths, starts, strict=False)]
    aligns = list(right) if right is not None else [False] * n
    if hidden:
        shown.append(["…"] * len(cells[0]))
        widths, aligns = [*widths, 1], [*aligns[: len(widths)], False]

    def rule(left: str, fill: str, cross: str, end: str) -> str:
        return left + cross.join(fill * (w + 2) for w in widths) + end

    def line(i: int) -> str:
        parts = []
        for c, w, r in zip(shown, widths, aligns, strict=False):
            pad = " " * (w - _width(c[i]))
            parts.append(pad + c[i] if r and i else c[i] + pad)
        return "│ " + " ┆ ".join(parts) + " │"

    lines = [line(i) for i in range(len(cells[0]))]
    text = "\n".join(
        [rule("┌", "─", "┬", "┐"), lines[0], rule("╞", "═", "╪", "╡"), *lines[1:], rule("└", "─", "┴", "┘")]
    )
    if hidden:
        import textwrap

        note = f"… {len(hidden)} more column(s) not shown at this width: {', '.join(hidden)} (--wide, -f csv)"
        text += "\n" + "\n".join(textwrap.wrap(note, max(width or 0, 40), break_on_hyphens=False))
    return text


#: the narrowest a column that gives way first is cut to, and the narrowest any column is
FLEX_MIN, CELL_MIN = 12, 6


def _span(widths: Sequence[int]) -> int:
    """Terminal columns a table of columns ``widths`` takes: ``│ `` before, `` ┆ `` between, `` │`` after."""
    return sum(widths) + 3 * len(widths) + 1


def fit_widths(
    natural: Sequence[int], shrink: Sequence[bool], width: int | None, heads: Sequence[int] | None = None
) -> list[int]:
    """The width rule of every terminal table: the widths of the columns shown when their cells want ``natural``
    and the terminal has ``width`` columns (None: no limit). The widest columns are cut first, those of ``shrink``
    (names, text) down to :data:`FLEX_MIN`, then to :data:`CELL_MIN`; if that is not enough, every column down to
    :data:`CELL_MIN`; if the
    columns still do not fit, only the first ones that do are kept (with room for a ``…`` column after them). A
    column is never cut narrower than its header (``heads``: the headers' widths), which stays whole."""
    if width is None or _span(natural) <= width:
        return list(natural)
    least = [min(w, max(CELL_MIN, h)) for w, h in zip(natural, heads or [0] * len(natural), strict=True)]
    floors = [min(w, max(FLEX_MIN, f)) if s else w for w, f, s in zip(natural, least, shrink, strict=True)]
    for narrowest in ([f if s else w for w, f, s in zip(natural, least, shrink, strict=True)], least):
        if _span(floors) > width:
            floors = narrowest
    if _span(floors) <= width:
        cap = max(natural)
        while cap > 1 and _span([max(f, min(w, cap)) for w, f in zip(natural, floors, strict=True)]) > width:
            cap -= 1
        return [max(f, min(w, cap)) for w, f in zip(natural, floors, strict=True)]
    kept = floors
    while kept and _span(kept) + 4 > width:  # 4: the "…" column
        kept = kept[:-1]
    return kept


def clip(text: str, width: int, start: bool = False) -> str:
    """``text`` cut to ``width`` terminal columns, its last (``start``: its first) one ``…`` where it was cut."""
    if _width(text) <= width:
        return text
    out, used = [], 0
    for ch in reversed(text) if start else text:
        w = _width(ch)
        if used + w > width - 1:
            break
        out.append(ch)
        used += w
    return "…" + "".join(reversed(out)) if start else "".join(out) + "…"


def terminal_width() -> int:
    """The columns a terminal table may take: ``$COLUMNS``, else the terminal's width, else 80 (a pipe, a file)."""
    import shutil

    return shutil.get_terminal_size((80, 24)).columns


def render_rows(rows: Rows, width: int | None = None) -> str:
    """An aligned text table of every row of ``rows`` (:func:`rooflake.schema.duck.fetch_rows`), as
    :func:`render_text` prints a table; no pyarrow, no polars."""
    zone = ZoneInfo(rows.zone) if rows.zone else None
    columns: list[list[Any]] = []
    for i, t in enumerate(rows.types):
        col = [r[i] for r in rows.rows]
        if str(t) == TIMESTAMPTZ and zone is not None:
            # a local time Python's datetime cannot hold (year 0, year 10000) comes from DuckDB as its text
            col = [v.replace(tzinfo=zone) if isinstance(v, datetime.datetime) else v for v in col]
        columns.append(_duck_maps(col, t))
    return _grid(list(rows.names), columns, width)


def _duck_maps(values: list[Any], t: Any) -> list[Any]:
    """``values`` of DuckDB type ``t`` with every map (a dict in Python, as a struct is) as a :class:`_Map`."""
    if t.id == "map":
        item = t.children[1][1]
        return [
            None if v is None else _Map(zip(v, _duck_maps(list(v.values()), item), strict=True))
            for v in values
        ]
    if t.id in ("list", "array") and "MAP(" in str(t):
        return [None if v is None else _duck_maps(list(v), t.children[0][1]) for v in values]
    if t.id == "struct" and "MAP(" in str(t):
        fields = dict(t.children)
        return [
            None if v is None else {k: _duck_maps([x], fields[k])[0] for k, x in v.items()} for v in values
        ]
    return values


def render_text(table: pa.Table | Rows, width: int | None = None) -> str:
    """An aligned text table of every row and column (values as polars prints them: :func:`format_float`, lists of
    at most :data:`LIST_LIMIT` items, cells of at most :data:`STR_LIMIT` characters), control characters escaped,
    fitted to ``width`` terminal columns (None: no limit) by :func:`fit_widths`."""
    if isinstance(table, Rows):
        return render_rows(table, width)
    columns = [_maps(col.to_pylist(), f.type) for f, col in zip(table.schema, table.columns, strict=True)]
    return _grid(table.column_names, columns, width)


def _maps(values: list[Any], t: pa.DataType) -> list[Any]:
    """``values`` of Arrow type ``t`` with every map (a list of (key, value) pairs in Python) as a :class:`_Map`."""
    import pyarrow as pa

    if pa.types.is_map(t):
        return [
            None
            if v is None
            else _Map(zip([k for k, _ in v], _maps([x for _, x in v], t.item_type), strict=True))
            for v in values
        ]
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return [None if v is None else _maps(v, t.value_type) for v in values]
    if pa.types.is_struct(t):
        fields = [t.field(i) for i in range(t.num_fields)]
        return [
            None if v is None else {f.name: _maps([v[f.name]], f.type)[0] for f in fields} for v in values
        ]
    return values


#: a NULL in a table of human units (a value the source does not have: never 0)
NULL_CELL = "—"

#: the units :func:`human` writes: a duration in ns, a fraction 0..1 (and a change of it) as a percentage, rates
#: and amounts with an SI prefix, plain numbers to three significant digits
SI_UNITS = ("FLOP/s", "B/s", "op/s", "FLOP", "B", "Hz")


def human(value: Any, unit: str | None) -> str:
    """One cell of a terminal table in human units, from a value in the store's base units: ``ns`` ->
    ``'1.39 ms'`` (ns, µs, ms, s), ``FLOP/s`` -> ``'25.3 TFLOP/s'``, ``B/s`` -> ``'598 GB/s'`` (also ``FLOP``,
    ``B``, ``Hz``, ``op/s`` (integer Tensor-Core ops): SI prefixes k to E), ``%`` (a fraction 0..1) -> ``'61.5 %'``, ``+%`` (a change, new / old - 1)
    -> ``'-28.8 %'``, ``FLOP/B`` or ``x`` (AI, ratios) -> ``'61.6'``; None -> :data:`NULL_CELL`, NaN ``'NaN'``;
    text (``unit`` None) as :func:`printable` writes it. Machine formats (csv, json, parquet) never pass here."""
    from rooflake.render.formats import duration, si, significant

    if value is None:
        return NULL_CELL
    if isinstance(value, bool) or not isinstance(value, int | float):
        return printable(value) if isinstance(value, str) else _cell(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if unit == "ns":
        return duration(value, digits=3)
    if unit in ("%", "+%"):
        return f"{100 * value:{'+' if unit == '+%' else ''}.1f} %"
    if unit in SI_UNITS:
        return si(value, unit)
    if isinstance(value, float) and unit is not None:
        return significant(value)
    return str(value) if isinstance(value, int) else format_float(value)


def unit_of(name: str) -> str | None:
    """The unit :func:`human` writes a column in, by the store's naming rule (units in every name): ``*_ns`` ns,
    ``*flops_per_s`` FLOP/s, ``*bytes_per_s``/``bw_*`` B/s, ``ai_*``/``ridge_*`` FLOP/B, ``*share*``/``*fraction*``
    %, ``*change*`` +%, ``*flops*`` FLOP, ``*bytes*`` B, ``*ratio*``/``speedup``/``inefficiency`` x, ``*_hz`` Hz;
    None for others (counts, ids, text)."""
    rules = (
        (name.endswith("_ns"), "ns"),
        ("flops_per_s" in name, "FLOP/s"),
        ("bytes_per_s" in name or name.startswith("bw_"), "B/s"),
        (name.startswith(("ai_", "ridge_")) or "_ai_" in name, "FLOP/B"),
        ("share" in name or "fraction" in name, "%"),
        ("change" in name, "+%"),
        ("flops" in name, "FLOP"),
        ("bytes" in name, "B"),
        ("ratio" in name or "over" in name or name in ("speedup", "inefficiency"), "x"),
        (name.endswith("_hz"), "Hz"),
    )
    return next((unit for hit, unit in rules if hit), None)


@dataclass(frozen=True)
class Column:
    """One column of a terminal table: its ``header``, its ``value`` (a column name, or a function of the row
    giving the cell's value or its finished text), the ``unit`` :func:`human` writes it in (None: text or a
    count). Numbers and units are right-aligned, text left (``right`` overrides); text gives way first when the
    table is cut to the terminal's width (``shrink`` overrides), losing its end (``cut_start``: its beginning, as
    for an NVTX path whose leaf tells layers apart)."""

    header: str
    value: str | Callable[[dict[str, Any]], Any]
    unit: str | None = None
    right: bool | None = None
    shrink: bool | None = None
    cut_start: bool = False

    def cell(self, row: dict[str, Any]) -> str:
        v = row.get(self.value) if isinstance(self.value, str) else self.value(row)
        return human(v, self.unit)


def columns_of(names: Sequence[str]) -> list[Column]:
    """A :class:`Column` per column name, headed by its name, in the unit :func:`unit_of` reads from it: the
    ``--wide`` table of a command (every column of its result)."""
    return [Column(n, n, unit_of(n)) for n in names]


def _right(c: Column, rows: Sequence[dict[str, Any]]) -> bool:
    """Whether column ``c`` is right-aligned: as it says, else when it has a unit or holds numbers only."""
    if c.right is not None or c.unit is not None:
        return c.right if c.right is not None else True
    values = [r.get(c.value) for r in rows] if isinstance(c.value, str) else []
    numbers = [v for v in values if v is not None]
    return bool(numbers) and all(isinstance(v, int | float) and not isinstance(v, bool) for v in numbers)


def render_table(rows: Sequence[dict[str, Any]], columns: Sequence[Column], width: int | None = None) -> str:
    """The terminal table of ``rows`` (dicts) in ``columns``, fitted to ``width`` (None: no limit): every command's
    default table is drawn here, with :func:`human` units and :func:`printable` text. A column without a header
    whose every cell is empty (a marker nothing set) is left out."""
    cells = [[printable(c.header)] + [c.cell(r) for r in rows] for c in columns]
    kept = [i for i, col in enumerate(cells) if any(col)]  # a column with no header and no text: left out
    columns, cells = [columns[i] for i in kept], [cells[i] for i in kept]
    right = [_right(c, rows) for c in columns]
    shrink = [c.shrink if c.shrink is not None else not r for c, r in zip(columns, right, strict=True)]
    return draw(cells, width, right, shrink, [c.cut_start for c in columns])


def render_markdown(table: pa.Table) -> str:
    """A GitHub-flavoured Markdown table of every row (floats to 4 significant digits), control characters
    escaped and ``|`` as ``\\|``."""

    def cell(v: Any) -> str:
        if v is None:
            return ""
        if isinstance(v, float):
            return f"{v:.4g}"
        return printable(str(v)).replace("|", "\\|")

    head = "| " + " | ".join(cell(c) for c in table.column_names) + " |"
    rule = "|" + "---|" * table.num_columns
    body = ["| " + " | ".join(cell(v) for v in row.values()) + " |" for row in table.to_pylist()]
    return "\n".join([head, rule, *body])


def csv_field(text: str | None) -> str:
    """One CSV field, quoted only where it must be (RFC 4180 minimal quoting: a comma, a quote, CR or LF; a quote
    doubled), NULL as nothing and an empty string as ``""`` (so a reader such as DuckDB's tells them apart, as
    DuckDB's own writer does)."""
    if text is None:
        return ""
    if text == "" or any(c in text for c in ',"\r\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


def _csv(table: pa.Table) -> bytes:
    """``table`` as CSV: a header line, then one line per row, each value as Arrow writes it (Arrow's cast to text:
    the same digits as its CSV writer), lists and maps as JSON text, quoted by :func:`csv_field`."""
    import pyarrow as pa
    import pyarrow.compute as pc

    texts: list[list[str | None]] = []
    for field, col in zip(table.schema, table.columns, strict=True):
        if pa.types.is_nested(field.type):  # CSV cannot hold lists/maps: JSON text
            texts.append([None if v is None else json.dumps(_plain(v)) for v in col.to_pylist()])
        elif pa.types.is_string(field.type) or pa.types.is_large_string(field.type):
            texts.append(col.to_pylist())
        else:
            texts.append(pc.cast(col, pa.string()).to_pylist())
    lines = [",".join(csv_field(n) for n in table.column_names)]
    lines += [",".join(map(csv_field, row)) for row in zip(*texts, strict=True)]
    return ("\n".join(lines) + "\n").encode()


def _json(table: pa.Table | Rows) -> bytes:
    """One JSON array of row objects. Rows from :func:`rooflake.schema.duck.fetch_pylist` hold the values
    ``to_pylist`` gives for the same result (no pyarrow needed): both give the same bytes."""
    if isinstance(table, Rows):
        records = [
            dict(zip(table.names, r, strict=True)) for r in table.rows
        ]  # a repeated name: its last value
    else:
        records = _ns_as_text(table).to_pylist()
    rows = [{k: _plain(v) for k, v in r.items()} for r in records]
    return (json.dumps(rows, indent=None, default=str) + "\n").encode()


def _text_type(t: Any) -> Any:
    """Arrow type ``t`` with every nanosecond time stamp (also inside lists and structs) as a string."""
    import pyarrow as pa

    if pa.types.is_timestamp(t) and t.unit == "ns":
        return pa.string()
    if pa.types.is_list(t):
        f = t.value_field
        return pa.list_(pa.field(f.name, _text_type(f.type), f.nullable))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _text_type(f.type), f.nullable) for f in t])
    return t


def _ns_as_text(table: pa.Table) -> pa.Table:
    """``table`` with its nanosecond time stamps (TIMESTAMP_NS) as Arrow's text of them, all nine digits
    (``2024-03-10 12:34:56.123456789``): Python's datetime holds microseconds, and pyarrow's ``to_pylist`` raises
    ValueError for them unless pandas is installed (then JSON had pandas' text): the same text in every install."""
    import pyarrow as pa

    schema = pa.schema([f.with_type(_text_type(f.type)) for f in table.schema])
    return table if schema.equals(table.schema) else table.cast(schema)


def _parquet(table: pa.Table) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = pa.BufferOutputStream()
    pq.write_table(table, buf)
    return bytes(buf.getvalue().to_pybytes())


def write_table(table: pa.Table | Rows, fmt: str, out: Path | None, wide: bool = False) -> None:
    """Write ``table`` as ``fmt`` (table | csv | json | parquet) to ``out`` or stdout. ``table``: a
    ``pyarrow.Table``, or for the table format :class:`rooflake.schema.duck.Rows` (no pyarrow needed), or for
    json the Rows of :func:`rooflake.schema.duck.fetch_pylist`. The table format on stdout is fitted to the
    terminal's width (:func:`terminal_width`) unless ``wide``.

    ``out``: written by the rule of :mod:`rooflake.render.files` (missing parent directories created, atomic; a
    device such as ``/dev/stdout`` written in place). Raises :class:`UsageError` for parquet without ``out``,
    :class:`rooflake.schema.OutputError` (naming the path) when ``out`` cannot be written."""
    if fmt == "json":
        data = _json(table)
    elif fmt not in ("parquet", "csv"):
        width = None if wide or out is not None else terminal_width()
        data = (render_text(table, width) + "\n").encode()
    elif isinstance(table, Rows):
        raise TypeError(f"--format {fmt} needs a pyarrow.Table, not Rows")
    elif fmt == "parquet":
        if out is None:
            raise UsageError("--format parquet needs --out FILE")
        data = _parquet(table)
    else:
        data = _csv(table)
    write_out(data, out)


def write_view(
    table: pa.Table | Rows, columns: Sequence[Column], fmt: str, out: Path | None, wide: bool = False
) -> None:
    """A command's result: on the terminal (``fmt`` table, no ``out``) the few ``columns`` that answer its
    question, in human units, fitted to the terminal's width; with ``wide`` every column of ``table`` in human units
    (:func:`columns_of`), as wide as it takes; any other format or an ``out`` file: every column as
    :func:`write_table` writes it (raw values in the store's units)."""
    if fmt != "table" or out is not None:
        write_table(table, fmt, out)
        return
    if isinstance(table, Rows):
        names, rows = list(table.names), [dict(zip(table.names, r, strict=True)) for r in table.rows]
    else:
        names, rows = table.column_names, table.to_pylist()
    text = render_table(rows, columns_of(names), None) if wide else None
    write_out(((text or render_table(rows, columns, terminal_width())) + "\n").encode(), None)


def write_out(data: bytes, out: Path | None) -> None:
    """``data`` to stdout, or to ``out`` by the rule of :mod:`rooflake.render.files`."""
    if out is None:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    else:
        write_file(out, data)
