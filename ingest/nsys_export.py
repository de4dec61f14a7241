"""The SQLite side of the Nsight Systems reader: an export opened read-only through ADBC, its tables and columns, and
the source tables the attribution needs read as Arrow, whole (:func:`select`) or as a stream of batches
(:func:`select_stream`, which :mod:`rooflake.ingest.nsys_sqlite` writes to Parquet files that DuckDB reads for the
rest).

Tables and columns are selected by name and may be missing (an export without CUDA trace has no kernel table).
NVTX text is inline (``text``) or a ``textId`` into ``StringIds``. Reading goes through ADBC (Arrow-native, ~5x
faster than ``sqlite3`` row tuples). The statements are ``nsys/export_*.sql``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pyarrow as pa

from rooflake.ingest import NSYS_EXPORT_HINT, sqlscript
from rooflake.ingest.messages import first_line, shown
from rooflake.schema import InputError
from rooflake.schema.duck import sql_file, sql_template

PKG = "rooflake.ingest"

# source columns: (export column, DuckDB type, our name); "NAME" = an id into StringIds or inline text
# columns every GPU operation table (kernel, memcpy, memset) has
GPU_OP_COLS = [
    ("rowid", "BIGINT", "src_row"),  # SQLite's row id: joins a row back to its attribution at write time
    ("start", "BIGINT", "start"),
    ("end", "BIGINT", "end"),
    ("deviceId", "BIGINT", "device_id"),
    ("contextId", "BIGINT", "context_id"),
    ("streamId", "BIGINT", "stream_id"),
    ("correlationId", "BIGINT", "correlation_id"),
    ("globalPid", "BIGINT", "process_id"),
]
KERNEL_COLS = GPU_OP_COLS + [
    ("demangledName", "NAME", "name"),
    ("shortName", "NAME", "short_name"),
    ("mangledName", "NAME", "mangled_name"),
    *((f"{d}{a}", "BIGINT", f"{d}_{a.lower()}") for d in ("grid", "block") for a in "XYZ"),
    ("registersPerThread", "BIGINT", "registers"),
    ("staticSharedMemory", "BIGINT", "smem_static"),
    ("dynamicSharedMemory", "BIGINT", "smem_dynamic"),
    ("graphId", "BIGINT", "graph_id"),
    ("graphNodeId", "BIGINT", "graph_node_id"),
]
MEMOP_COLS = GPU_OP_COLS + [
    ("bytes", "BIGINT", "bytes"),
    ("copyKind", "BIGINT", "copy_kind"),
    ("graphNodeId", "BIGINT", "graph_node_id"),
]
# (the call's end is not read: the attribution takes a launch call's start; REQUIRED_COLUMNS still asks for it)
API_COLS = [
    ("start", "BIGINT", "start"),
    ("globalTid", "BIGINT", "thread"),
    ("correlationId", "BIGINT", "correlation_id"),
    ("nameId", "NAME", "api"),
]
NVTX_COLS = [
    ("rowid", "BIGINT", "src_row"),
    ("start", "BIGINT", "start"),
    ("end", "BIGINT", "end"),
    ("eventType", "BIGINT", "event_type"),
    ("text", "VARCHAR", "text_inline"),
    ("textId", "BIGINT", "text_id"),
    ("globalTid", "BIGINT", "thread"),
    ("endGlobalTid", "BIGINT", "end_thread"),
    ("domainId", "BIGINT", "domain_id"),
]
GPU_COLS = [
    ("id", "BIGINT", "device_id"),
    ("name", "VARCHAR", "gpu_name"),
    ("computeMajor", "BIGINT", "cc_major"),
    ("computeMinor", "BIGINT", "cc_minor"),
]
META_COLS = [("name", "VARCHAR", "name"), ("value", "VARCHAR", "value")]
# the sources of the attribution: our name -> (export table, columns)
SOURCES: dict[str, tuple[str, list[tuple[str, str, str]]]] = {
    "nvtx_raw": ("NVTX_EVENTS", NVTX_COLS),
    "k_raw": ("CUPTI_ACTIVITY_KIND_KERNEL", KERNEL_COLS),
    "api_raw0": ("CUPTI_ACTIVITY_KIND_RUNTIME", API_COLS),
    "api_raw1": ("CUPTI_ACTIVITY_KIND_DRIVER", API_COLS),
    "mc_raw": ("CUPTI_ACTIVITY_KIND_MEMCPY", MEMOP_COLS),
    "ms_raw": ("CUPTI_ACTIVITY_KIND_MEMSET", MEMOP_COLS),
    "gpus": ("TARGET_INFO_GPU", GPU_COLS),
    "strings": ("StringIds", [("id", "BIGINT", "id"), ("value", "VARCHAR", "value")]),
}
# the sources whose views end with src_pos, each row's position in the table as DuckDB scans it (0-based): the
# stack sweep's results are joined to NVTX_EVENTS by position (nsys/ranges.sql)
POSITIONED = ("nvtx_raw",)
# columns without which a source table's rows mean nothing (every Nsight Systems export seen has them): a table
# that lacks one is not an export's, and reading it would store rows of NULL times, not refuse the file
REQUIRED_COLUMNS: dict[str, tuple[str, ...]] = {
    "StringIds": ("id", "value"),
    "NVTX_EVENTS": ("start",),
    **{
        f"CUPTI_ACTIVITY_KIND_{kind}": ("start", "end")
        for kind in ("KERNEL", "RUNTIME", "DRIVER", "MEMCPY", "MEMSET")
    },
}


def lacking(tables: dict[str, Any]) -> str | None:
    """What the export's tables lack of :data:`REQUIRED_COLUMNS` (``"CUPTI_ACTIVITY_KIND_KERNEL has no start,
    end"``; tables joined by ``; ``), or None. ``tables``: table name -> its column names (a dict or set keyed by
    name), or None for a table the export lacks."""
    out = []
    for table, required in REQUIRED_COLUMNS.items():
        cols = tables.get(table)
        if cols is not None and (missing := [c for c in required if c not in cols]):
            out.append(f"{table} has no {', '.join(missing)}")
    return "; ".join(out) or None


# the big tables (NVTX_EVENTS in a PyTorch trace, the kernels or the API calls in others): the biggest is read on
# a second thread while the others are read and DuckDB starts on them
MAY_BE_LATE = ("nvtx_raw", "k_raw", "api_raw0")
META_TABLES = ("META_DATA_EXPORT", "EXPORT_META_DATA")  # the older exports name it EXPORT_META_DATA

# a source: (DuckDB select list over the Arrow table aliased ``a``, typed; the Arrow table, or None when the export
# lacks the table)
Source = tuple[str, "pa.Table | None"]


def sqlite_uri(path: str | Path) -> str:
    """The SQLite URI that opens exactly the file ``path``, read-only and immutable, whatever the characters of its
    name: the absolute path percent-encoded (``#``, ``?``, ``%``, spaces, non-UTF-8 bytes), with an empty
    authority (``file:///…``) so that a path starting with ``//`` stays a path."""
    raw = os.fsencode(Path(path).absolute())
    return "file://" + quote(raw, safe="/") + "?mode=ro&immutable=1"


def quoted(name: str) -> str:
    """An SQL identifier, double-quoted (SQLite and DuckDB)."""
    return '"' + name.replace('"', '""') + '"'


class Export:
    """One SQLite export opened read-only and immutable through ADBC's low-level API (its DB-API module imports
    pandas and polars: +75 MB of memory for nothing). Queries return Arrow; the driver releases the GIL while it
    reads. Raises :class:`InputError` (one line, naming the file) when the file cannot be opened."""

    def __init__(self, path: Path) -> None:
        import adbc_driver_manager
        import adbc_driver_sqlite

        self.path = path
        # batches() generators: close() closes them (and so their statements)
        self.streams: list[Generator[pa.Table, None, None]] = []
        try:
            self.db = adbc_driver_sqlite.connect(sqlite_uri(path))
        except Exception as e:  # noqa: BLE001 - the driver raises its own error types
            raise InputError(f"{shown(path)}: cannot open as SQLite ({first_line(e)})") from e
        try:
            self.conn = adbc_driver_manager.AdbcConnection(self.db)
        except Exception as e:  # noqa: BLE001
            self.db.close()
            raise InputError(f"{shown(path)}: cannot open as SQLite ({first_line(e)})") from e

    def arrow(self, sql: str, what: str, sources: dict[str, str] | None = None) -> pa.Table:
        """The result of ``sql`` as Arrow, in batches of 64k rows. Raises :class:`InputError` as
        :meth:`batches`."""
        return pa.concat_tables(self.batches(sql, what, sources))

    def batches(self, sql: str, what: str, sources: dict[str, str] | None = None) -> Iterator[pa.Table]:
        """The result of ``sql`` as Arrow tables of one batch each (64k rows), read as they are consumed: first an
        empty table with the result's columns, then one per batch. Raises :class:`InputError` naming the file and
        ``what`` was being read, with the driver's message on one line; where a value of an integer column
        (``sources``: result column -> export column, the integer columns) has another type than the first rows'
        (ADBC's ``Type mismatch in column 2: …``, a position in the result), the message names the column and the
        type as :func:`select` does. A stream its consumer left unfinished (an error in DuckDB while it loaded the
        batches) is closed by :meth:`close`."""
        stream = self._batches(sql, what, sources or {})
        self.streams.append(stream)
        return stream

    def _batches(self, sql: str, what: str, sources: dict[str, str]) -> Generator[pa.Table, None, None]:
        import adbc_driver_manager

        names: list[str] = []
        try:
            stmt = adbc_driver_manager.AdbcStatement(self.conn)
            try:
                # batches of 64k rows, not the driver's 1,024: ~10% faster on a 700k-row NVTX table, and DuckDB
                # scans 11 chunks instead of 691
                stmt.set_options(**{"adbc.sqlite.query.batch_rows": "65536"})
                stmt.set_sql_query(sql)
                stream, _ = stmt.execute_query()
                reader = pa.RecordBatchReader.from_stream(stream)
                names = reader.schema.names
                # (not Schema.empty_table, which imports pandas where installed: ~0.3 s and ~40 MB for nothing)
                yield pa.Table.from_batches([], schema=reader.schema)
                for batch in reader:
                    yield pa.Table.from_batches([batch])
            finally:
                stmt.close()
        except Exception as e:  # noqa: BLE001 - the driver raises its own error types
            why = first_line(e)
            at = _MISMATCH.search(why)
            if at is not None and int(at[1]) < len(names) and names[int(at[1])] in sources:
                column = sources[names[int(at[1])]]
                held = _KINDS.get(at[3], at[3]) + (
                    "" if at[2] == "INT64" else f" after {_KINDS.get(at[2], at[2])}"
                )
                raise InputError(
                    f"{shown(self.path)}: column {column} of {what} holds {held} values where Nsight Systems writes "
                    "integers"
                ) from e
            raise InputError(f"{shown(self.path)}: cannot read {what} ({why})") from e

    def tables(self) -> dict[str, dict[str, str]]:
        """Every table (and view) of the export -> its columns -> declared type (upper case). Raises
        :class:`InputError` when the file is not a readable SQLite database."""
        try:
            t = self.arrow(sql_file(PKG, "nsys/export_tables.sql"), "its table list")
        except InputError as e:
            why = first_line(e.__cause__ or e)
            raise InputError(f"{shown(self.path)}: not a readable SQLite database ({why})") from e
        out: dict[str, dict[str, str]] = {}
        for table, column, declared in zip(*(c.to_pylist() for c in t.columns), strict=True):
            out.setdefault(str(table), {})[str(column)] = str(declared)
        return out

    def close(self) -> None:
        for stream in self.streams:  # an open statement would make the connection's close raise
            stream.close()
        self.conn.close()
        self.db.close()


def select(
    db: Export, tables: dict[str, dict[str, str]], table: str, cols: list[tuple[str, str, str]]
) -> Source:
    """The present ``cols`` of ``table`` read as Arrow (missing ones as NULL in the select list).

    Returns (a DuckDB select list over the Arrow table aliased ``a``, typed; the Arrow table, or None when the
    table is missing). NAME columns become ``<ours>_id`` (id into StringIds) and ``<ours>_text`` (inline text).
    SQLite is dynamically typed and ADBC types each column from the first rows it reads: text columns are CAST to
    TEXT in SQLite (text after NULLs would fail the read), integer columns are read as stored: a whole number stored
    as a real or as text is converted exactly (:func:`_as_integers`), any other value is an :class:`InputError`
    naming the column (``CAST('abc' AS INTEGER)`` is 0 in SQLite, a number the export never held; uncast is also
    faster: 3.1 vs 3.3 CPU s for 5.7M NVTX rows). Text that
    is not valid UTF-8 is decoded with replacement (:func:`valid_utf8`); every text column ``c`` has a ``c_hex``
    beside it in the select list: its raw bytes in hex where they were not valid, NULL elsewhere.
    """
    present = tables.get(table)
    if present is not None:
        present = {"rowid": "INTEGER", **present}  # SQLite's implicit row id: stable identity of a row
    duck, sql = _typed(present or {}, cols)
    texts = [o for _, typ, o in cols if typ == "VARCHAR"] + [
        f"{o}_text" for _, typ, o in cols if typ == "NAME"
    ]
    arrow: pa.Table | None = None
    bad: set[str] = set()
    if present is not None and sql:
        query = sql_template(PKG, "nsys/export_read.sql", columns=", ".join(sql), table=quoted(table))
        whole = db.arrow(query, table, _sources(cols))
        arrow, bad = valid_utf8(
            _as_integers(db.path, table, whole, _integers(db.path, table, whole.schema, cols))
        )
    return _hexed(duck, texts, bad), arrow


def select_stream(
    db: Export, tables: dict[str, dict[str, str]], table: str, cols: list[tuple[str, str, str]]
) -> tuple[str, pa.RecordBatchReader | None]:
    """The present ``cols`` of ``table`` as :func:`select` gives them, but read one batch (64k rows) at a time as
    the returned reader is consumed (no whole table in Python memory).

    Returns (the typed DuckDB select list over the reader aliased ``a``; the reader, or None when the table is
    missing). Every batch has, after the read columns, a ``<c>_hex`` column for every text column ``c`` read (NULL
    where the text is valid UTF-8: :func:`valid_utf8` batch by batch), so that all batches have one schema. Reading
    raises :class:`InputError` from the reader's iteration."""
    present = tables.get(table)
    if present is not None:
        present = {"rowid": "INTEGER", **present}
    duck, sql = _typed(present or {}, cols)
    texts = [o for _, typ, o in cols if typ == "VARCHAR"] + [
        f"{o}_text" for _, typ, o in cols if typ == "NAME"
    ]
    if present is None or not sql:
        return _hexed(duck, texts, set()), None
    query = sql_template(PKG, "nsys/export_read.sql", columns=", ".join(sql), table=quoted(table))
    parts = db.batches(query, table, _sources(cols))
    first = next(parts)
    cast = _integers(db.path, table, first.schema, cols)
    read = _as_integers(db.path, table, first, cast).schema
    strings = [f.name for f in read if pa.types.is_string(f.type)]
    schema = pa.schema([*read, *((f"{c}_hex", pa.string()) for c in strings)])

    def batches() -> Iterator[pa.RecordBatch]:
        for part in parts:
            arrow, bad = valid_utf8(_as_integers(db.path, table, part, cast))
            hexes = [arrow[f"{c}_hex"] if c in bad else pa.nulls(len(arrow), pa.string()) for c in strings]
            columns = [arrow[f.name] for f in read] + hexes
            yield from pa.Table.from_arrays(columns, schema=schema).to_batches()

    return _hexed(duck, texts, set(strings)), pa.RecordBatchReader.from_batches(schema, batches())


def _hexed(duck: list[str], texts: list[str], bad: set[str]) -> str:
    """The select list ``duck`` with the ``_hex`` column of every text column ``texts``: read where the column held
    invalid UTF-8 (``bad``), NULL elsewhere."""
    hexes = [f"a.{c}_hex::VARCHAR AS {c}_hex" if c in bad else f"NULL::VARCHAR AS {c}_hex" for c in texts]
    return ", ".join(duck + hexes)


def _typed(present: dict[str, str], cols: list[tuple[str, str, str]]) -> tuple[list[str], list[str]]:
    """(the DuckDB select list of ``cols``, the SQLite select list of those ``present``); see :func:`select`."""
    duck: list[str] = []
    sql: list[str] = []
    for src, typ, ours in cols:
        declared = present.get(src)
        if typ == "NAME":
            if declared is None:
                duck += [f"NULL::BIGINT AS {ours}_id", f"NULL::VARCHAR AS {ours}_text"]
            elif "TEXT" in declared or "CHAR" in declared:
                sql.append(f"CAST({quoted(src)} AS TEXT) AS {quoted(ours + '_text')}")
                duck += [f"NULL::BIGINT AS {ours}_id", f"a.{ours}_text::VARCHAR AS {ours}_text"]
            else:
                sql.append(f"{quoted(src)} AS {quoted(ours + '_id')}")
                duck += [f"a.{ours}_id::BIGINT AS {ours}_id", f"NULL::VARCHAR AS {ours}_text"]
        elif declared is None:
            duck.append(f"NULL::{typ} AS {ours}")
        else:
            sql.append(
                f"CAST({quoted(src)} AS TEXT) AS {quoted(ours)}"
                if typ == "VARCHAR"
                else f"{quoted(src)} AS {quoted(ours)}"
            )
            duck.append(f"a.{ours}::{typ} AS {ours}")
    return duck, sql


def _sources(cols: list[tuple[str, str, str]]) -> dict[str, str]:
    """Result column -> export column of the integer columns of ``cols`` as :func:`_typed` reads them."""
    ids = {f"{o}_id": src for src, typ, o in cols if typ == "NAME"}
    return {o: src for src, typ, o in cols if typ == "BIGINT"} | ids


def _integers(path: Path, table: str, schema: pa.Schema, cols: list[tuple[str, str, str]]) -> dict[str, str]:
    """The integer columns of ``cols`` (read uncast: see :func:`select`) that ADBC typed, from the first rows it
    read, as real or text (result column -> export column): their values are converted batch by batch
    (:func:`_as_integers`). Raises :class:`InputError` naming the file, ``table`` and the column when one was typed
    as anything else (a blob). (A value of another type after those rows makes ADBC's read fail: also an
    :class:`InputError`.)"""
    cast, names = {}, _sources(cols)
    for field in schema:
        src = names.get(field.name)
        if src is None or pa.types.is_int64(field.type) or pa.types.is_null(field.type):
            continue
        if not (pa.types.is_floating(field.type) or pa.types.is_string(field.type)):
            kind = _KINDS.get(str(field.type), str(field.type))
            raise InputError(
                f"{shown(path)}: column {src} of {table} holds {kind} values where Nsight Systems writes integers"
            )
        cast[field.name] = src
    return cast


def _as_integers(path: Path, table: str, t: pa.Table, cast: dict[str, str]) -> pa.Table:
    """``t`` with the columns ``cast`` (result column -> export column; :func:`_integers`) as int64, each value
    exactly: a real that is a whole number within int64 (``100.0``, as ``pandas.to_sql`` writes a nullable integer
    column), text that is an integer (``'100'``). Raises :class:`InputError` naming the file, ``table`` and the
    column for any other value (a fraction, NaN, text that is no integer): SQLite's CAST would have made it a
    number the export never held."""
    for name, src in cast.items():
        i = t.schema.get_field_index(name)
        kind = "real" if pa.types.is_floating(t.schema.field(i).type) else "text"
        try:
            values = t.column(i).cast(pa.int64())  # a safe cast: no truncation, no overflow
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise InputError(
                f"{shown(path)}: column {src} of {table} holds {kind} values where Nsight Systems writes integers "
                f"({first_line(e)})"
            ) from None
        t = t.set_column(i, pa.field(name, pa.int64()), values)
    return t


_KINDS = {"string": "text", "double": "real", "binary": "blob", "STRING/BINARY": "text or blob", "DOUBLE": "real",
          "INT64": "integer"}  # fmt: skip
# ADBC's message for a value of another type than the column's first rows: (position, expected, got)
_MISMATCH = re.compile(r"Type mismatch in column (\d+): expected (\S+) but got (\S+)")


def valid_utf8(t: pa.Table) -> tuple[pa.Table, set[str]]:
    """``t`` with the invalid UTF-8 sequences of its string columns replaced by U+FFFD (Python's ``errors="replace"``),
    and after each column ``c`` that held any, a column ``c_hex``: the raw bytes in hex on those rows, NULL on the
    others; and the names of those columns. SQLite stores TEXT unchecked and ADBC passes it on, but a Parquet file
    with invalid UTF-8 makes every query of its table fail. Valid columns are checked by Arrow (no Python loop)."""
    bad: set[str] = set()
    for i, field in enumerate(t.schema):
        if not pa.types.is_string(field.type):
            continue
        try:
            t.column(i).validate(full=True)
            continue
        except pa.ArrowInvalid:
            pass
        text: list[str | None] = []
        hexes: list[str | None] = []
        for b in t.column(i).cast(pa.binary()).to_pylist():
            try:
                text.append(None if b is None else b.decode("utf-8"))
                hexes.append(None)
            except UnicodeDecodeError:
                text.append(b.decode("utf-8", errors="replace"))
                hexes.append(b.hex())
        t = t.set_column(i, field, pa.array(text, pa.string()))
        t = t.append_column(f"{field.name}_hex", pa.array(hexes, pa.string()))
        bad.add(field.name)
    return t, bad


def meta(db: Export, tables: dict[str, dict[str, str]]) -> dict[str, str]:
    """The export's metadata (``META_DATA_EXPORT``: EXPORT_SCHEMA_VERSION, EXPORT_PRODUCT_VERSION, ...); empty
    without that table. Text that is not UTF-8 (a report's path in a name that is not) reads with U+FFFD in place
    of its bad bytes (:func:`valid_utf8`)."""
    for table in META_TABLES:
        if table in tables:
            _, arrow = select(db, tables, table, META_COLS)
            # by name: a column of invalid UTF-8 brings its _hex column after the others
            if arrow is not None:
                names, values = (arrow.column(ours).to_pylist() for _, _, ours in META_COLS)
                return {str(k): str(v) for k, v in zip(names, values, strict=True)}
    return {}


def cut_short(path: Path) -> str | None:
    """Why the SQLite file ``path`` cannot be whole, or None: its size is not a whole number of pages, or is less
    than the page count its header records (bytes 28-31, when valid: bytes 92-95 equal the change counter at 24-27;
    page size at 16-17, 1 meaning 65536; https://sqlite.org/fileformat.html, "The Database Header"). SQLite reads
    the pages past the end of a cut file as empty, opened immutable as the reader opens it: a table whose rows
    were there reads as empty, with no error. A file too short for a header is left to SQLite."""
    try:
        with open(path, "rb") as f:
            header = f.read(100)
            size = os.fstat(f.fileno()).st_size
    except OSError:
        return None  # opening it through SQLite says why, naming the file
    if len(header) < 100 or not header.startswith(b"SQLite format 3\x00"):
        return None
    page = int.from_bytes(header[16:18], "big")
    page = 65536 if page == 1 else page
    if page < 512 or page & (page - 1):
        return None  # not a valid page size: SQLite refuses the file itself
    pages = int.from_bytes(header[28:32], "big")
    if size % page:
        return f"{size} bytes: not a whole number of {page}-byte pages; cut short?"
    if pages and header[92:96] == header[24:28] and size < pages * page:
        return f"{size} bytes where its header records {pages} pages of {page} bytes; cut short?"
    return None


# the tables of SOURCES besides StringIds: an SQLite file without export metadata holds at least one of them to be
# taken for an export (a real one always has metadata; exports built by hand, as the tests build them, may not)
_EXPORT_TABLES = [source for name, source in SOURCES.items() if name != "strings"]


def check(path: Path) -> tuple[dict[str, str], dict[str, int]]:
    """The export's metadata and the size of each source table that may be read on a second thread (rows x
    columns, from its largest rowid: no scan), after checking that ``path`` is an SQLite Nsight Systems export (a
    StringIds table, and export metadata or another table of :data:`SOURCES`) whose tables hold the columns every
    export has (:data:`REQUIRED_COLUMNS`) and whose size is the one its header gives (:func:`cut_short`). Raises
    :class:`InputError`."""
    if (why := cut_short(path)) is not None:
        raise InputError(
            f"{shown(path)}: a damaged SQLite file ({why}); export the report again: {NSYS_EXPORT_HINT}"
        )
    db = Export(path)
    try:
        tables = db.tables()
        info = meta(db, tables)
        if "StringIds" not in tables and not info:
            raise InputError(
                f"{shown(path)}: an SQLite database, but not an Nsight Systems export (no StringIds table)"
            )
        if not info and not any(table in tables for table, _ in _EXPORT_TABLES):
            raise InputError(
                f"{shown(path)}: an SQLite database with a StringIds table, but not an Nsight Systems export (none "
                "of an export's metadata, GPU, kernel, API, NVTX, memcpy or memset tables)"
            )
        if (what := lacking(tables)) is not None:
            raise InputError(
                f"{shown(path)}: not an Nsight Systems export, or a damaged one: {what} (columns every export "
                f"has); export the report again: {NSYS_EXPORT_HINT}"
            )
        sizes = {}
        for name in MAY_BE_LATE:
            table, cols = SOURCES[name]
            if table in tables:
                rows = db.arrow(sql_template(PKG, "nsys/export_rows.sql", table=quoted(table)), table)
                n = rows.column(0)[0].as_py() or 0
                sizes[name] = n * sum(c in tables[table] for c, _, _ in cols)
        return info, sizes
    finally:
        db.close()


def purge(con: Any) -> None:
    """Make DuckDB's allocator give back what it keeps (``nsys/purge.sql``: the connection's thread count is set to 1
    and back to what it was), then glibc's heaps (:func:`trim_heap`: DuckDB's threads allocate from them, and their
    freed blocks stay resident until trimmed)."""
    sqlscript.run(con, "nsys/purge.sql")
    trim_heap()


def trim_heap() -> None:
    """Give freed heap memory back to the OS: glibc keeps the ADBC driver's freed Arrow buffers otherwise, and the
    blocks DuckDB's threads and the NVTX stack sweep (rooflake.ingest.nsys_sweep) freed; Arrow's own pool (mimalloc
    or jemalloc) keeps what it served."""
    pa.default_memory_pool().release_unused()
    _glibc("malloc_trim", 0)


# glibc's mallopt parameter for the size from which an allocation is its own mmap (given back when freed)
_M_MMAP_THRESHOLD = -3


def mmap_big_allocations(threshold: int = 1 << 20) -> None:
    """Make glibc serve allocations of ``threshold`` bytes and more from their own mmap, for the rest of the
    process: the NVTX stack sweep's numpy arrays (rooflake.ingest.nsys_sweep) are then given back to the OS when
    freed. Without it glibc raises that threshold to the size of each big block freed (up to 32 MB), serves the
    next arrays from its heap, and keeps ~50 MB of it resident through the rest of the ingest (at 5.7M NVTX
    ranges)."""
    _glibc("mallopt", _M_MMAP_THRESHOLD, threshold)


def _glibc(function: str, *args: int) -> None:
    """Call glibc's ``function`` (malloc tuning); nothing happens on another C library."""
    import contextlib
    import ctypes
    import ctypes.util

    with contextlib.suppress(OSError, AttributeError):  # not glibc
        getattr(ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6"), function)(*args)
