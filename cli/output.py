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

__all__ = ["format_float", "printable", "render_markdown", "render_rows", "render_text", "write_table"]

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


# The terminal table looks as polars printed it before (issue 14: importing polars for it cost 0.15 s of each
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


def _grid(names: list[str], columns: list[list[Any]]) -> str:
    """The bordered table of ``columns`` (values) under ``names``."""
    if not names:
        return "┌┐\n╞╡\n└┘"
    cells = [[printable(n)] + [_cell(v) for v in col] for n, col in zip(names, columns, strict=True)]
    widths = [max(map(_width, col)) for col in cells]

    def rule(left: str, fill: str, cross: str, right: str) -> str:
        return left + cross.join(fill * (w + 2) for w in widths) + right

    lines = [
        "│ " + " ┆ ".join(c[i] + " " * (w - _width(c[i])) for c, w in zip(cells, widths, strict=True)) + " │"
        for i in range(len(cells[0]))
    ]
    return "\n".join(
        [rule("┌", "─", "┬", "┐"), lines[0], rule("╞", "═", "╪", "╡"), *lines[1:], rule("└", "─", "┴", "┘")]
    )


def render_rows(rows: Rows) -> str:
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
    return _grid(list(rows.names), columns)


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


def render_text(table: pa.Table | Rows) -> str:
    """An aligned text table of every row (values as polars prints them: :func:`format_float`, lists of at most
    :data:`LIST_LIMIT` items, cells of at most :data:`STR_LIMIT` characters), control characters escaped."""
    if isinstance(table, Rows):
        return render_rows(table)
    columns = [_maps(col.to_pylist(), f.type) for f, col in zip(table.schema, table.columns, strict=True)]
    return _grid(table.column_names, columns)


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


def _csv(table: pa.Table) -> bytes:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    flat = table
    for i, field in enumerate(table.schema):
        if pa.types.is_nested(field.type):  # CSV cannot hold lists/maps: JSON text
            col = [json.dumps(_plain(v)) for v in table.column(i).to_pylist()]
            flat = flat.set_column(i, field.name, pa.array(col, pa.string()))
    buf = pa.BufferOutputStream()
    pacsv.write_csv(flat, buf)
    return bytes(buf.getvalue().to_pybytes())


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


def write_table(table: pa.Table | Rows, fmt: str, out: Path | None) -> None:
    """Write ``table`` as ``fmt`` (table | csv | json | parquet) to ``out`` or stdout. ``table``: a
    ``pyarrow.Table``, or for the table format :class:`rooflake.schema.duck.Rows` (no pyarrow needed), or for
    json the Rows of :func:`rooflake.schema.duck.fetch_pylist`.

    ``out``: written by the rule of :mod:`rooflake.render.files` (missing parent directories created, atomic; a
    device such as ``/dev/stdout`` written in place). Raises :class:`UsageError` for parquet without ``out``,
    :class:`rooflake.schema.OutputError` (naming the path) when ``out`` cannot be written."""
    if fmt == "json":
        data = _json(table)
    elif fmt not in ("parquet", "csv"):
        data = (render_text(table) + "\n").encode()
    elif isinstance(table, Rows):
        raise TypeError(f"--format {fmt} needs a pyarrow.Table, not Rows")
    elif fmt == "parquet":
        if out is None:
            raise UsageError("--format parquet needs --out FILE")
        data = _parquet(table)
    else:
        data = _csv(table)
    if out is None:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    else:
        write_file(out, data)
