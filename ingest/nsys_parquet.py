"""Reader for Nsight Systems Parquet exports (``nsys export --type parquetdir``, Nsight Systems 2024.6 and newer): a
folder holding one ``<TABLE>.parquet`` per export table, with the SQLite export's table and column names.

DuckDB reads the files in place (``read_parquet``; no SQLite step, no copy into Python memory): each source of the
attribution (``k_raw``, ``nvtx_raw``, ... of :data:`rooflake.ingest.nsys_export.SOURCES`) is a typed view over its
file (``nsys/parquet_view.sql``), and from there the SQLite reader's code runs unchanged
(:func:`rooflake.ingest.nsys_sqlite.attribute` and :func:`~rooflake.ingest.nsys_sqlite.outputs`: the same SQL, the
same output tables). A row's position in its file + 1 stands for SQLite's ``rowid`` (``range_id`` of a range).

:func:`is_parquetdir` recognises such a folder by its file names; :func:`write_parquetdir` writes one from an SQLite
export (every table, each column typed by its declared SQLite type), for tools that read only Parquet and for the
tests and benchmarks that compare both paths.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from rooflake.ingest import nsys_sqlite
from rooflake.ingest.messages import first_line, shown, utf8_named
from rooflake.ingest.nsys_export import META_COLS, META_TABLES, SOURCES, lacking, quoted
from rooflake.schema import InputError
from rooflake.schema.duck import sql_template

PKG = "rooflake.ingest"
FORMAT = "nsys-parquetdir"
SUFFIX = ".parquet"
# every Nsight Systems export has a string table: a folder without it is not a whole export
REQUIRED = ("StringIds",)
# the tables whose files make a folder an nsys parquetdir export
KNOWN = (*REQUIRED, *META_TABLES, *(table for table, _ in SOURCES.values()))
EXPORT_HINT = "nsys export --type parquetdir --output FOLDER FILE.nsys-rep"


def is_parquetdir(path: str | Path) -> bool:
    """Whether ``path`` is a folder holding at least one ``<TABLE>.parquet`` of an Nsight Systems export table
    (``StringIds``, ``CUPTI_ACTIVITY_KIND_KERNEL``, ``NVTX_EVENTS``, ...). A folder that has some but lacks a
    required one is still recognised: reading it then says what is missing."""
    path = Path(path)
    return path.is_dir() and any((path / f"{table}{SUFFIX}").is_file() for table in KNOWN)


def _kind(t: pa.DataType) -> str:
    """``text`` (a string column), ``bytes`` (a binary column: nsys's own Arrow writer stores text so), or ``other``."""
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "text"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "bytes"
    return "other"


# the Arrow types a source column of each of the reader's types may have (NAME: an id or inline text); nsys's own
# Arrow export (checked: nsys 2022.4 --type arrow) writes unsigned integers (uint32, uint64) and text as binary
_FITS = {
    "BIGINT": lambda t: pa.types.is_integer(t) or pa.types.is_null(t),
    "VARCHAR": lambda t: _kind(t) != "other" or pa.types.is_null(t),
    "NAME": lambda t: pa.types.is_integer(t) or _kind(t) != "other" or pa.types.is_null(t),
}


def _columns(folder: Path, table: str, cols: list[tuple[str, str, str]]) -> dict[str, str] | None:
    """Column name -> its kind (:func:`_kind`), of ``<table>.parquet`` (its footer only); None without that file.
    Raises :class:`InputError` naming the folder and file when it is not a readable Parquet file, or when one of
    the reader's columns ``cols`` has a type that cannot hold it (text where integers belong, ...)."""
    import pyarrow.parquet as pq

    file = folder / f"{table}{SUFFIX}"
    if not file.is_file():
        return None
    try:
        with open(file, "rb") as f:  # a file object: pyarrow refuses a name whose bytes are not UTF-8
            schema = pq.read_schema(f)
    except (OSError, pa.ArrowException) as e:
        raise InputError(
            f"{shown(folder)}: {file.name} is not a readable Parquet file ({first_line(e)}); export the report "
            f"again: {EXPORT_HINT}"
        ) from e
    for src, typ, _ in cols:
        i = schema.get_field_index(src)
        if i >= 0 and not _FITS[typ](schema.field(i).type):
            raise InputError(
                f"{shown(folder)}: {file.name}: column {src} is {schema.field(i).type}, not "
                f"{'an integer' if typ == 'BIGINT' else 'text' if typ == 'VARCHAR' else 'an integer id or text'}"
            )
    return {f.name: _kind(f.type) for f in schema}


def check(folder: Path) -> tuple[dict[str, str], dict[str, dict[str, str] | None]]:
    """The export's metadata (``META_DATA_EXPORT``: name -> value; empty without it) and, per export table the
    reader needs, its columns (see :func:`_columns`; None for a table the folder lacks). Raises
    :class:`InputError` (one line, naming the folder) for a folder without a required table, with a file that is
    not readable Parquet, or with a table that lacks a column every export has
    (:data:`rooflake.ingest.nsys_export.REQUIRED_COLUMNS`)."""
    import pyarrow.parquet as pq

    missing = [t for t in REQUIRED if not (folder / f"{t}{SUFFIX}").is_file()]
    if missing:
        raise InputError(
            f"{shown(folder)}: an incomplete Nsight Systems parquetdir export: no {', '.join(missing)}{SUFFIX} "
            f"(every export has it); export the report again: {EXPORT_HINT}"
        )
    tables = {table: _columns(folder, table, cols) for table, cols in SOURCES.values()}
    if (what := lacking(tables)) is not None:
        raise InputError(
            f"{shown(folder)}: not an Nsight Systems parquetdir export, or a damaged one: {what} (columns every "
            f"export has); export the report again: {EXPORT_HINT}"
        )
    meta: dict[str, str] = {}
    for table in META_TABLES:
        cols = _columns(folder, table, META_COLS)
        if cols is not None and all(c in cols for c, _, _ in META_COLS):
            try:
                with open(folder / f"{table}{SUFFIX}", "rb") as f:
                    t = pq.read_table(f, columns=[c for c, _, _ in META_COLS])
                t = t.cast(pa.schema([(c, pa.string()) for c, _, _ in META_COLS]))
            except (OSError, pa.ArrowException) as e:
                raise InputError(f"{shown(folder)}: cannot read {table}{SUFFIX} ({first_line(e)})") from e
            meta = {str(k): str(v) for k, v in zip(*(c.to_pylist() for c in t.columns), strict=True)}
            break
    return meta, tables


def _text(ref: str, kind: str | None) -> tuple[str, str]:
    """(the VARCHAR expression, the ``_hex`` expression) of text column ``ref`` of ``kind`` (:func:`_kind`; None
    when missing). Binary text is decoded as UTF-8; where it is not valid UTF-8, the text keeps the bytes escaped
    (``\\xFF``) and ``_hex`` holds them in hex, as the SQLite reader's ``_hex`` columns do."""
    if kind is None:
        return "NULL::VARCHAR", "NULL::VARCHAR"
    if kind == "bytes":
        return (
            f"coalesce(try(decode({ref})), {ref}::VARCHAR)",
            f"CASE WHEN try(decode({ref})) IS NULL THEN lower(hex({ref})) END",
        )
    return f"{ref}::VARCHAR", "NULL::VARCHAR"  # Parquet strings are valid UTF-8


def select_list(present: dict[str, str] | None, cols: list[tuple[str, str, str]]) -> str:
    """The typed DuckDB select list of source columns ``cols`` (see :data:`rooflake.ingest.nsys_export.SOURCES`)
    over a Parquet file aliased ``a`` whose columns are ``present`` (name -> kind, :func:`_kind`): the same columns,
    names and types as the SQLite reader's (:func:`rooflake.ingest.nsys_export.select`). A NAME column is
    ``<ours>_id`` (an integer id into StringIds) or ``<ours>_text`` (inline text) by its Parquet type; ``rowid``
    is the file's own column of that name or its row position + 1; missing columns are typed NULLs; every text
    column ``c`` has ``c_hex`` after the others, in the SQLite reader's order (see :func:`_text`)."""
    has_file, present = present is not None, present or {}
    out: list[str] = []
    hexes: list[str] = []
    name_hexes: list[str] = []  # after the VARCHAR columns' ones, as in the SQLite reader's views
    for src, typ, ours in cols:
        ref = f"a.{quoted(src)}"
        kind = present.get(src)
        if src == "rowid" and has_file and kind is None:
            out.append(f"(a.file_row_number + 1)::{typ} AS {ours}")
        elif typ == "NAME":
            text, hexed = _text(ref, kind if kind in ("text", "bytes") else None)
            ids = f"{ref}::BIGINT" if kind == "other" else "NULL::BIGINT"
            out += [f"{ids} AS {ours}_id", f"{text} AS {ours}_text"]
            name_hexes.append(f"{hexed} AS {ours}_text_hex")
        elif typ == "VARCHAR":
            text, hexed = _text(ref, kind)
            out.append(f"{text} AS {ours}")
            hexes.append(f"{hexed} AS {ours}_hex")
        else:
            out.append(f"{ref}::{typ} AS {ours}" if kind is not None else f"NULL::{typ} AS {ours}")
    return ", ".join(out + hexes + name_hexes)


class ParquetSources:
    """The attribution's sources as views over the folder's Parquet files (:class:`nsys_sqlite.SourceViews`):
    all made at once, read by DuckDB where the SQL reads them; a table the folder lacks is an empty view with the
    same typed columns."""

    def __init__(self, con: Any, folder: Path, tables: dict[str, dict[str, str] | None]) -> None:
        self.present: dict[str, bool] = {}
        for name, (table, cols) in SOURCES.items():
            present = tables.get(table)
            self.present[name] = present is not None
            file = (folder / f"{table}{SUFFIX}").absolute() if present is not None else None
            nsys_sqlite.source_view(con, name, select_list(present, cols), file)

    def need(self, name: str) -> None:
        """Nothing to wait for: every view exists from the start."""

    def release(self, *names: str) -> None:
        """Nothing to free: the views read their files as the SQL scans them."""


@contextlib.contextmanager
def open_export(path: str | Path, *, run_id: str) -> Iterator[dict[str, Any]]:
    """Open one Nsight Systems parquetdir export (a folder) and attribute its GPU operations to NVTX ranges, in
    DuckDB, with the SQLite reader's SQL.

    Yields what :func:`rooflake.ingest.nsys_sqlite.open_export` yields (``kernels`` KERNELS, ``memops`` MEMOPS,
    ``ranges`` RANGES, ``coverage`` COVERAGE as DuckTables valid inside the ``with`` block, and ``run``), with
    ``run["source_format"] = "nsys-parquetdir"`` and a ``note`` saying the folder is one run. Raises
    :class:`InputError` (one line, naming the folder) for a folder that lacks a required table (``StringIds``),
    a file that is not readable Parquet (its footer), a table without a column every export has (``start``...), a
    column of a type that cannot hold the reader's, or a damaged page found while DuckDB reads (inside the
    ``with`` block too: while the tables are published).
    """
    import duckdb

    folder = Path(path)
    meta, tables = check(folder)
    with (
        tempfile.TemporaryDirectory(prefix="rooflake-duckdb-") as spill,
        utf8_named(folder, "export.parquetdir") as read_at,
    ):
        con = nsys_sqlite.connect(spill)
        try:
            src = ParquetSources(con, read_at, tables)
            nsys_sqlite.attribute(con, src, shown(folder))
            out = nsys_sqlite.outputs(con, meta, src, run_id)
            out["run"]["source_format"] = FORMAT
            n = sum(t is not None for t in tables.values())
            out["run"]["note"] = f"nsys parquetdir export: the folder is one run, {n} source tables read"
            yield out
        except duckdb.Error as e:
            # a damaged data page (the footers were checked: DuckDB may or may not name the file), here or while
            # the tables are published; an I/O error elsewhere than the folder is the store's, not the export's
            if isinstance(e, duckdb.IOException) and str(read_at.absolute()) not in str(e):
                raise
            raise InputError(f"{shown(folder)}: cannot read the Parquet export ({first_line(e)})") from e
        finally:
            con.close()


def _arrow_type(declared: str) -> tuple[str, pa.DataType]:
    """(SQLite type to CAST to, Arrow type) of a column by its declared SQLite type (SQLite's affinity rules:
    INT -> integer, CHAR/CLOB/TEXT -> text, REAL/FLOA/DOUB -> real; anything else is written as text)."""
    if "INT" in declared:
        return "INTEGER", pa.int64()
    if any(k in declared for k in ("REAL", "FLOA", "DOUB")):
        return "REAL", pa.float64()
    return "TEXT", pa.string()


def write_parquetdir(sqlite: str | Path, folder: str | Path) -> list[str]:
    """Write every table of the SQLite export ``sqlite`` to ``folder/<TABLE>.parquet`` (the layout of
    ``nsys export --type parquetdir``): rows in the table's order, each column typed by its declared SQLite type
    (INTEGER int64, REAL float64, TEXT string; text that is not valid UTF-8 decoded with replacement). Returns the
    tables written. Raises :class:`InputError` when ``sqlite`` is not a readable SQLite database; ``OSError`` when
    the folder cannot be written."""
    import pyarrow.parquet as pq

    from rooflake.ingest.nsys_export import Export, valid_utf8

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    db = Export(Path(sqlite))
    try:
        written = []
        for table, declared in db.tables().items():
            types = {col: _arrow_type(d) for col, d in declared.items()}
            columns = ", ".join(f"CAST({quoted(c)} AS {sq}) AS {quoted(c)}" for c, (sq, _) in types.items())
            sql = sql_template(PKG, "nsys/export_read.sql", columns=columns, table=quoted(table))
            schema = pa.schema([(c, t) for c, (_, t) in types.items()])
            arrow, bad = valid_utf8(db.arrow(sql, table))
            arrow = arrow.drop_columns([f"{c}_hex" for c in bad]).cast(schema)
            pq.write_table(arrow, folder / f"{table}{SUFFIX}")
            written.append(table)
        return written
    finally:
        db.close()
