"""Writing result tables for the CLI: an aligned text table, Markdown, CSV, JSON or Parquet, to stdout or a file.

Text for a terminal (the table and Markdown formats) shows control characters escaped (:func:`printable`): NVTX
text and kernel names come from the profiled program, and an ESC, OSC, BEL or CR in them must not drive the
terminal. CSV, JSON and Parquet are data and stay faithful. Files are written by the rule of
:mod:`rooflake.render.files` (parents created, atomic, :class:`rooflake.schema.OutputError` naming the path).
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rooflake.render.files import write_file
from rooflake.schema import UsageError

# imported where used: a command that prints JSON loads neither polars nor pyarrow.csv
if TYPE_CHECKING:
    import polars as pl
    import pyarrow as pa

__all__ = ["printable", "render_markdown", "render_text", "write_table"]

# C0 controls (TAB, LF and CR too: one row, one line), DEL, C1 controls (0x9b is CSI on some terminals), the line
# and paragraph separators, and the bidirectional controls that can reorder what a terminal shows
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every control character written as its escape (``\\x1b``, ``\\x07``, ``\\x0d``, ``\\u202e``), so
    that it shows as it is and does nothing to the terminal; other characters unchanged."""
    return _CONTROL.sub(_escape, text)


def _printable_value(v: Any) -> Any:
    """``v`` with :func:`printable` applied to every string inside it (lists, dicts, map entries)."""
    if isinstance(v, str):
        return printable(v)
    if isinstance(v, list):
        return [_printable_value(x) for x in v]
    if isinstance(v, tuple):
        return tuple(_printable_value(x) for x in v)
    if isinstance(v, dict):
        return {_printable_value(k): _printable_value(x) for k, x in v.items()}
    return v


def _has_strings(dtype: pl.DataType) -> bool:
    """The column may hold text: strings, categoricals, or any nested type (lists, structs, maps)."""
    import polars as pl

    return dtype == pl.String or isinstance(dtype, pl.Categorical | pl.Enum) or dtype.is_nested()


def _printable_frame(df: pl.DataFrame) -> pl.DataFrame:
    """``df`` with control characters escaped in every string (columns and names); other values unchanged."""
    import polars as pl

    out = []
    for s in df.get_columns():
        if s.dtype == pl.String:
            if s.str.contains(_CONTROL.pattern).any():
                s = pl.Series(s.name, [None if v is None else printable(v) for v in s.to_list()], pl.String)
        elif _has_strings(s.dtype):
            s = pl.Series(s.name, [_printable_value(v) for v in s.to_list()], s.dtype, strict=False)
        out.append(s.rename(printable(s.name)))
    return pl.DataFrame(out)


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


def render_text(table: pa.Table) -> str:
    """An aligned text table of every row (values as polars prints them), control characters escaped."""
    import polars as pl

    df = pl.from_arrow(table)
    assert isinstance(df, pl.DataFrame)
    with pl.Config(
        tbl_rows=-1,
        tbl_cols=-1,
        fmt_str_lengths=80,
        tbl_width_chars=65_000,  # never squeeze columns: the terminal wraps, pipes keep every column
        tbl_hide_dataframe_shape=True,
        tbl_hide_column_data_types=True,
        tbl_hide_dtype_separator=True,
    ):
        return str(_printable_frame(df))


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


def _parquet(table: pa.Table) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = pa.BufferOutputStream()
    pq.write_table(table, buf)
    return bytes(buf.getvalue().to_pybytes())


def write_table(table: pa.Table, fmt: str, out: Path | None) -> None:
    """Write ``table`` as ``fmt`` (table | csv | json | parquet) to ``out`` or stdout.

    ``out``: written by the rule of :mod:`rooflake.render.files` (missing parent directories created, atomic; a
    device such as ``/dev/stdout`` written in place). Raises :class:`UsageError` for parquet without ``out``,
    :class:`rooflake.schema.OutputError` (naming the path) when ``out`` cannot be written."""
    if fmt == "parquet":
        if out is None:
            raise UsageError("--format parquet needs --out FILE")
        data = _parquet(table)
    elif fmt == "csv":
        data = _csv(table)
    elif fmt == "json":
        rows = [{k: _plain(v) for k, v in r.items()} for r in table.to_pylist()]
        data = (json.dumps(rows, indent=None, default=str) + "\n").encode()
    else:
        data = (render_text(table) + "\n").encode()
    if out is None:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    else:
        write_file(out, data)
