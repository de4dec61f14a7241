"""Reader for Nsight Systems SQLite exports (``nsys export --type sqlite``), any schema version seen so far.

Entry point: :func:`open_export` (``rooflake.ingest.read`` fetches its tables as Arrow). Tables and columns are selected by name and may be missing (an export without CUDA trace
has no kernel table: the run gets 0 kernels). NVTX text is inline (``text``) or a ``textId`` into ``StringIds``.
Reading goes through ADBC (Arrow-native, ~5x faster than ``sqlite3`` row tuples; the biggest table on a second
thread); the attribution of every kernel, memcpy and memset to the NVTX ranges open on its launching thread is DuckDB
SQL (``nsys_attribution.sql``); the output tables stay in DuckDB until :class:`rooflake.store.DuckTable` streams them
to Parquet.
"""

from __future__ import annotations

import contextlib
import logging
import re
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from importlib import resources
from pathlib import Path
from typing import Any

import pyarrow as pa

from rooflake.schema import COVERAGE, KERNELS, MEMOPS, RANGES, InputError
from rooflake.store import DuckTable, conform_select

# source columns: (table, column, DuckDB type, our name); "NAME" = an id into StringIds or inline text
# columns every GPU operation table (kernel, memcpy, memset) has
_GPU_OP_COLS = [
    ("rowid", "BIGINT", "src_row"),  # SQLite's row id: joins a row back to its attribution at write time
    ("start", "BIGINT", "start"),
    ("end", "BIGINT", "end"),
    ("deviceId", "BIGINT", "device_id"),
    ("contextId", "BIGINT", "context_id"),
    ("streamId", "BIGINT", "stream_id"),
    ("correlationId", "BIGINT", "correlation_id"),
    ("globalPid", "BIGINT", "process"),
]
_KERNEL_COLS = _GPU_OP_COLS + [
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
_MEMOP_COLS = _GPU_OP_COLS + [("bytes", "BIGINT", "bytes"), ("copyKind", "BIGINT", "copy_kind")]
_API_COLS = [
    ("start", "BIGINT", "start"),
    ("end", "BIGINT", "end"),
    ("globalTid", "BIGINT", "thread"),
    ("correlationId", "BIGINT", "correlation_id"),
    ("nameId", "NAME", "api"),
]
_NVTX_COLS = [
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
_GPU_COLS = [
    ("id", "BIGINT", "device_id"),
    ("name", "VARCHAR", "gpu_name"),
    ("computeMajor", "BIGINT", "cc_major"),
    ("computeMinor", "BIGINT", "cc_minor"),
]
log = logging.getLogger(__name__)
_NO_COUNTERS = "NULL: Nsight Systems records no hardware counters (ingest an ncu report of the same program)"
# per kernel one short entry, not one per quantity (runs.derivation holds the full reason)
_NO_COUNTERS_SHORT = "NULL: no counters in Nsight Systems"


class _Sqlite:
    """A read-only SQLite connection through ADBC's low-level API (its DB-API module imports pandas and polars:
    +75 MB of memory for nothing). Queries return Arrow; the driver releases the GIL while it reads."""

    def __init__(self, path: Path) -> None:
        import adbc_driver_manager
        import adbc_driver_sqlite

        self.db = adbc_driver_sqlite.connect(f"file:{path}?mode=ro")
        try:
            self.conn = adbc_driver_manager.AdbcConnection(self.db)
        except Exception:
            self.db.close()
            raise

    def arrow(self, sql: str) -> pa.Table:
        import adbc_driver_manager

        stmt = adbc_driver_manager.AdbcStatement(self.conn)
        try:
            # batches of 64k rows, not the driver's 1,024: ~10% faster on a 700k-row NVTX table, and DuckDB scans
            # 11 chunks instead of 691
            stmt.set_options(**{"adbc.sqlite.query.batch_rows": "65536"})
            stmt.set_sql_query(sql)
            stream, _ = stmt.execute_query()
            return pa.RecordBatchReader.from_stream(stream).read_all()
        finally:
            stmt.close()

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        t = self.arrow(sql)
        return list(zip(*(c.to_pylist() for c in t.columns), strict=True))

    def close(self) -> None:
        self.conn.close()
        self.db.close()


def _columns(db: _Sqlite, table: str) -> dict[str, str] | None:
    rows = db.rows(f"SELECT name, type FROM pragma_table_info('{table}')")
    return {str(r[0]): str(r[1] or "").upper() for r in rows} if rows else None


def _select(db: _Sqlite, table: str, cols: list[tuple[str, str, str]]) -> tuple[str, pa.Table | None]:
    """SELECT the present ``cols`` of ``table`` through ADBC (missing ones as NULL).

    Returns (a DuckDB select list over the Arrow table aliased ``a``, typed; the Arrow table, or None when the
    table is missing). NAME columns become ``<ours>_id`` (id into StringIds) and ``<ours>_text`` (inline text).
    SQLite is dynamically typed: every column is CAST in SQLite, so ADBC infers one type per column.
    """
    present = _columns(db, table)
    if present is not None:
        present.setdefault("rowid", "INTEGER")  # SQLite's implicit row id: stable identity of a row
    duck: list[str] = []
    sql: list[str] = []
    for src, typ, ours in cols:
        declared = (present or {}).get(src)
        if typ == "NAME":
            if declared is None:
                duck += [f"NULL::BIGINT AS {ours}_id", f"NULL::VARCHAR AS {ours}_text"]
            elif "TEXT" in declared or "CHAR" in declared:
                sql.append(f'CAST("{src}" AS TEXT) AS "{ours}_text"')
                duck += [f"NULL::BIGINT AS {ours}_id", f"a.{ours}_text::VARCHAR AS {ours}_text"]
            else:
                sql.append(f'CAST("{src}" AS INTEGER) AS "{ours}_id"')
                duck += [f"a.{ours}_id::BIGINT AS {ours}_id", f"NULL::VARCHAR AS {ours}_text"]
        elif declared is None:
            duck.append(f"NULL::{typ} AS {ours}")
        else:
            sql.append(f'CAST("{src}" AS {"TEXT" if typ == "VARCHAR" else "INTEGER"}) AS "{ours}"')
            duck.append(f"a.{ours}::{typ} AS {ours}")
    if present is None or not sql:
        return ", ".join(duck), None
    return ", ".join(duck), db.arrow(f'SELECT {", ".join(sql)} FROM "{table}"')


def _meta(db: _Sqlite) -> dict[str, str]:
    for table in ("META_DATA_EXPORT", "EXPORT_META_DATA"):
        if _columns(db, table) is not None:
            return {
                str(k): str(v)
                for k, v in db.rows(f'SELECT CAST(name AS TEXT), CAST(value AS TEXT) FROM "{table}"')
            }
    return {}


# our table name -> (export table, columns). The biggest table (NVTX_EVENTS in a PyTorch trace, the kernels or the API
# calls in others) is read on a second thread (the ADBC driver releases the GIL) while this one reads the others and
# DuckDB starts on them. Candidates: the big tables, each named by a "-- @wait" in nsys_attribution.sql.
_MAY_BE_LATE = ("nvtx_raw", "k_raw", "api_raw0")
_SOURCES: dict[str, tuple[str, list[tuple[str, str, str]]]] = {
    "nvtx_raw": ("NVTX_EVENTS", _NVTX_COLS),
    "k_raw": ("CUPTI_ACTIVITY_KIND_KERNEL", _KERNEL_COLS),
    "api_raw0": ("CUPTI_ACTIVITY_KIND_RUNTIME", _API_COLS),
    "api_raw1": ("CUPTI_ACTIVITY_KIND_DRIVER", _API_COLS),
    "mc_raw": ("CUPTI_ACTIVITY_KIND_MEMCPY", _MEMOP_COLS),
    "ms_raw": ("CUPTI_ACTIVITY_KIND_MEMSET", _MEMOP_COLS),
    "gpus": ("TARGET_INFO_GPU", _GPU_COLS),
    "strings": ("StringIds", [("id", "BIGINT", "id"), ("value", "VARCHAR", "value")]),
}

# (DuckDB select list over the Arrow table, the table or None if the export lacks it)
Source = tuple[str, "pa.Table | None"]


def _check(path: Path) -> tuple[dict[str, str], dict[str, int]]:
    """The export's metadata and the size of each source table (rows x columns, from its largest rowid: no scan),
    for the tables that may be read on the second thread, after checking that ``path`` is an SQLite Nsight Systems
    export. Raises :class:`InputError`."""
    try:
        db = _Sqlite(path)
    except Exception as e:  # noqa: BLE001 - the driver raises its own error types
        raise InputError(f"{path}: cannot open as SQLite ({e})") from e
    try:
        try:
            db.rows("SELECT count(*) FROM sqlite_master")
        except Exception as e:  # noqa: BLE001
            raise InputError(f"{path}: not a readable SQLite database ({str(e).splitlines()[0]})") from e
        meta = _meta(db)
        if _columns(db, "StringIds") is None and not meta:
            raise InputError(
                f"{path}: an SQLite database, but not an Nsight Systems export (no StringIds table)"
            )
        sizes = {}
        for name in _MAY_BE_LATE:
            table, cols = _SOURCES[name]
            present = _columns(db, table)
            if present is not None:
                (rows,) = db.rows(f'SELECT max(rowid) FROM "{table}"')[0]
                sizes[name] = (rows or 0) * sum(c in present for c, _, _ in cols)
        return meta, sizes
    finally:
        db.close()


def _read(path: Path, names: list[str]) -> dict[str, Source]:
    """Source tables ``names`` (see :func:`_select`). Raises :class:`InputError`."""
    try:
        db = _Sqlite(path)
        try:
            return {name: _select(db, *_SOURCES[name]) for name in names}
        finally:
            db.close()
    except Exception as e:  # noqa: BLE001 - the driver raises its own error types
        raise InputError(f"{path}: cannot read the Nsight Systems tables ({str(e).splitlines()[0]})") from e


def _load(con: Any, name: str, select: str, arrow: pa.Table | None) -> None:
    """Create DuckDB view ``name`` over the Arrow table (zero-copy), or empty with the same typed columns when it is
    None."""
    if arrow is None:
        con.execute(f"CREATE VIEW {name} AS SELECT {select} FROM (SELECT NULL AS _) AS a WHERE false")
        return
    con.register(f"{name}_arrow", arrow)  # zero-copy: DuckDB scans the Arrow buffers
    con.execute(f"CREATE VIEW {name} AS SELECT {select} FROM {name}_arrow AS a")


# DuckDB's memory for one export; it spills to a temporary directory beyond. A 150k-kernel, 700k-range export peaks
# at ~0.38 GB of resident memory in all, not reaching it (see CHANGELOG.md).
MEMORY_LIMIT = "1GB"
# push/pop ranges per slice of the NVTX stack sweep (nsys_attribution.sql): the sort of one slice's events is in
# memory at a time. At 700k ranges (peak RSS of read + attribution, time): one slice 0.46 GB; 200k 0.39-0.40 GB;
# 150k 0.39 GB; 100k 0.38 GB but +0.12 s
SLICE_RANGES = 150_000
# at most this many slices: each slice scans the sources again (~15 ms per slice at 700k ranges), so a fixed slice
# size would make the sweep quadratic in the export's size; beyond 8 x 150k ranges the slices grow instead
MAX_SLICES = 8


@contextlib.contextmanager
def open_export(path: str | Path, *, run_id: str) -> Iterator[dict[str, Any]]:
    """Open one Nsight Systems SQLite export and attribute its GPU operations to NVTX ranges, in DuckDB.

    Yields ``{"kernels": KERNELS, "memops": MEMOPS, "ranges": RANGES, "coverage": COVERAGE (DuckTables, valid
    inside the ``with`` block: :meth:`DuckTable.write_parquet` streams them to Parquet without a copy in Python
    memory), "run": dict}``; ``run`` holds producer (``nsys <EXPORT_PRODUCT_VERSION>``), source_schema_version
    (``EXPORT_SCHEMA_VERSION`` or ``none``), gpu_name, compute_capability, n_kernels, n_metrics (0), derivation.
    Kernel durations are integer ns (``end - start``) stored exactly; FLOP and byte columns are NULL (nsys has no
    counters) with that reason in ``provenance``. Raises :class:`InputError` when the file is not a readable
    SQLite export. DuckDB spills to a temporary directory beyond :data:`MEMORY_LIMIT`.
    """
    import duckdb

    path = Path(path)
    meta, sizes = _check(path)
    biggest = max(sizes, key=lambda n: sizes[n], default=None)
    with (
        ThreadPoolExecutor(1) as pool,
        tempfile.TemporaryDirectory(prefix="rooflake-duckdb-") as spill,
    ):
        late = {name: pool.submit(_read, path, [name]) for name in _SOURCES if name == biggest}
        try:
            sources = _read(path, [n for n in _SOURCES if n not in late])
            con = duckdb.connect(
                config={
                    "preserve_insertion_order": False,
                    "temp_directory": spill,
                    "memory_limit": MEMORY_LIMIT,
                    # give freed memory back after each task and bulk free, not past 128/512 MB: -30 to -40 MB of
                    # peak RSS at 150k kernels, same time
                    "allocator_flush_threshold": "8MB",
                    "allocator_bulk_deallocation_flush_threshold": "8MB",
                }
            )
            try:
                yield _attribute(con, meta, sources, late, run_id)
            finally:
                con.close()
        finally:
            for f in late.values():
                f.cancel()


def _attribute(
    con: Any,
    meta: dict[str, str],
    sources: dict[str, Source],
    late: dict[str, Future[dict[str, Source]]],
    run_id: str,
) -> dict[str, Any]:
    """Run nsys_attribution.sql over the sources (``late`` ones are still being read: each is loaded at the first
    ``-- @wait`` naming it) and declare the output tables. Raises :class:`InputError` when a late source cannot be
    read."""
    present = {}  # source -> whether the export has its table
    for table, (select, arrow) in sources.items():
        _load(con, table, select, arrow)
        present[table] = arrow is not None
    con.execute(f"SET VARIABLE slice_ranges = {int(SLICE_RANGES)}")
    con.execute(f"SET VARIABLE max_slices = {int(MAX_SLICES)}")
    sql = resources.files("rooflake.ingest").joinpath("nsys_attribution.sql").read_text(encoding="utf-8")
    stmts = _statements(sql)
    i = 0
    while i < len(stmts):
        # one statement, or the run of statements marked "-- @each <table>": once per row of the table
        each = next((d[2] for d in _directives(stmts[i]) if d[1] == "@each"), None)
        j = i + 1
        while (
            each is not None and j < len(stmts) and ["@each", each] in (d[1:3] for d in _directives(stmts[j]))
        ):
            j += 1
        block, i = stmts[i:j], j
        directives = [
            d for stmt in block for d in _directives(stmt)
        ]  # waits before the run, the others after
        for name in (n for d in directives if d[1] == "@wait" for n in d[2:] if n in late):
            sources.update(late.pop(name).result())
            _load(con, name, *sources[name])
            present[name] = sources[name][1] is not None
        if each is None:
            _execute(con, block[0])
        else:
            cur = con.execute(f"SELECT * FROM {each} ORDER BY 1")
            cols = [c[0] for c in cur.description]
            for row in cur.fetchall():
                for stmt in block:
                    _execute(con, stmt, _params(stmt, dict(zip(cols, row, strict=True))))
        if any(d[1] == "@purge" for d in directives):
            _purge(con)
        for name in (n for d in directives if d[1] == "@release" for n in d[2:]):
            if sources.pop(name)[1] is not None:  # drop the last references: the Arrow memory is freed
                con.unregister(f"{name}_arrow")
                _trim()

    counts = dict(con.execute("SELECT op_kind, count(*) FROM ops_out GROUP BY op_kind").fetchall())
    n_kernels = counts.get("kernel", 0)
    n_memops = sum(v for k, v in counts.items() if k != "kernel")
    (n_ranges,) = con.execute("SELECT count(*) FROM r0").fetchone()
    # The outputs are streamed to Parquet as DuckDB produces them, in row groups of 4k rows (a row group of 123k
    # kernels with their names buffers 130 MB), in no particular row order: sorting whole rows with their names
    # cost 280 MB at 150k kernels, and a sort of integers with the strings joined after it keeps its order only
    # while DuckDB probes with the sorted side (not when an export has more strings than kernels).
    kernel_cols = {
        "run_id": f"'{run_id}'",
        "kernel_id": "a.idx",
        **{n: f"coalesce(x.{n}_text, s_{n}.value)" for n in ("name", "short_name", "mangled_name")},
        **{c: f"x.{c}" for c in ("device_id", "context_id", "stream_id", "correlation_id", "graph_id",
                                 "graph_node_id")},
        **{c: f"a.{c}" for c in ("launch_thread", "launch_start_ns", "launch_api")},
        "attribution": "a.attribution",
        "nvtx_start_end": "a.nvtx_start_end",
        **{f"{d}_{a}": f"x.{d}_{a}" for d in ("grid", "block") for a in "xyz"},
        "grid_size": "x.grid_x * x.grid_y * x.grid_z",
        "block_size": "x.block_x * x.block_y * x.block_z",
        "registers_per_thread": "x.registers",
        "shared_mem_static_bytes": "x.smem_static",
        "shared_mem_dynamic_bytes": "x.smem_dynamic",
        "gpu_name": "g.gpu_name",
        "compute_capability": "CASE WHEN g.cc_major IS NOT NULL THEN g.cc_major::VARCHAR || '.' || g.cc_minor::VARCHAR END",
        **{c: f"p.{c}" for c in ("nvtx_path", "nvtx_stack", "nvtx_domain")},
        "start_ns": "x.start",
        "end_ns": 'x."end"',
        "duration_ns": 'x."end" - x.start',
        "process_id": "x.process",
        # CASE over a column, not a bare constant: DuckDB would write the column as REQUIRED (not null) and
        # pyarrow-written partitions have it OPTIONAL
        "provenance": f"CASE WHEN a.idx >= 0 THEN MAP {{'*': '{_NO_COUNTERS_SHORT}'}} END",
        "flags": "CASE WHEN a.idx >= 0 THEN []::VARCHAR[] END",
    }  # fmt: skip
    memop_cols = {
        "run_id": f"'{run_id}'",
        "op_id": "a.idx",
        "kind": "x.kind",
        **{c: f"x.{c}" for c in ("copy_kind", "bytes", "device_id", "context_id", "stream_id", "correlation_id")},
        **{c: f"a.{c}" for c in ("launch_thread", "launch_start_ns")},
        "attribution": "a.attribution",
        "start_ns": "x.start",
        "end_ns": 'x."end"',
        "duration_ns": 'x."end" - x.start',
        "process_id": "x.process",
        **{c: f"p.{c}" for c in ("nvtx_path", "nvtx_stack", "nvtx_domain")},
    }  # fmt: skip
    range_cols = {
        "run_id": f"'{run_id}'",
        "domain": "d.domain",
        "name": "r.name",
        "text": "r.text",
        **{c: f"r.{c}" for c in ("range_id", "kind", "start_ns", "end_ns", "process", "thread", "end_thread")},
        **{c: f"pp.{c}" for c in ("depth", "parent_id")},
    }  # fmt: skip
    names = "".join(
        f" LEFT JOIN strings AS s_{n} ON s_{n}.id = x.{n}_id" for n in ("name", "short_name", "mangled_name")
    )
    tables = {
        "kernels": DuckTable(
            con,
            f"""
            SELECT {conform_select(KERNELS, kernel_cols)}
            FROM k_raw AS x
            JOIN ops_out AS a ON a.src_row = x.src_row
            {names}
            LEFT JOIN gpus AS g ON g.device_id = x.device_id
            LEFT JOIN paths AS p ON p.path_id = a.path_id
            WHERE a.op_kind = 'kernel'  -- filtered on the narrow side: DuckDB builds its hash table there
            """,
            KERNELS,
            n_kernels,
        ),
        "memops": DuckTable(
            con,
            f"""
            SELECT {conform_select(MEMOPS, memop_cols)}
            FROM (SELECT 'memcpy' AS kind, * FROM mc_raw UNION ALL SELECT 'memset' AS kind, * FROM ms_raw) AS x
            JOIN ops_out AS a ON a.src_row = x.src_row AND a.op_kind = x.kind
            LEFT JOIN paths AS p ON p.path_id = a.path_id
            WHERE a.op_kind <> 'kernel'  -- filtered on the narrow side: DuckDB builds its hash table there
            """,
            MEMOPS,
            n_memops,
        ),
        "ranges": DuckTable(
            con,
            f"""
            SELECT {conform_select(RANGES, range_cols)}
            FROM ranges_named AS r
            LEFT JOIN pp ON pp.range_id = r.range_id
            LEFT JOIN domain_names AS d ON d.domain_id = r.domain_id
            """,
            RANGES,
            n_ranges,
            # the hash join builds on pp, written on the right: DuckDB's estimate of the filtered range view is
            # low, and it built on the 700k ranges with their text and names (+173 MB while writing, +64 MB so)
            settings={"disabled_optimizers": "build_side_probe_side"},
        ),
    }
    coverage_cols = {c: c for c in COVERAGE.names if c != "run_id"} | {"run_id": f"'{run_id}'"}
    con.execute(
        f"""
        CREATE TEMP TABLE coverage_out AS
        SELECT {conform_select(COVERAGE, coverage_cols)}
        FROM (
            SELECT device_id, op_kind, attribution, count(*) AS ops, sum("end" - start) AS gpu_time_ns,
                   count(graph_node_id) AS graph_ops
            FROM ops_out
            GROUP BY ALL
        )
        """
    )
    (n_cov,) = con.execute("SELECT count(*) FROM coverage_out").fetchone()
    tables["coverage"] = DuckTable(
        con, "SELECT * FROM coverage_out ORDER BY device_id, op_kind, attribution", COVERAGE, n_cov
    )
    gpu = con.execute("SELECT gpu_name, cc_major, cc_minor FROM gpus ORDER BY device_id LIMIT 1").fetchall()
    version = meta.get("EXPORT_PRODUCT_VERSION")
    return {
        **tables,
        "run": {
            "source_format": "nsys-sqlite",
            "producer": f"nsys {version}" if version else "nsys (export records no product version)",
            "source_schema_version": meta.get("EXPORT_SCHEMA_VERSION", "none (no META_DATA_EXPORT table)"),
            "command_line": None,
            "host": None,
            "gpu_name": gpu[0][0] if gpu else None,
            "compute_capability": f"{gpu[0][1]}.{gpu[0][2]}" if gpu and gpu[0][1] is not None else None,
            "n_kernels": n_kernels,
            "n_metrics": 0,
            "derivation": '{"all": ["' + _NO_COUNTERS + '"]}',
            "fp16_convention": None,
            "has_kernel_table": present["k_raw"],
        },
    }


def _trim() -> None:
    """Give freed heap memory back to the OS (glibc keeps the ADBC driver's freed Arrow buffers otherwise)."""
    import ctypes
    import ctypes.util

    with contextlib.suppress(OSError, AttributeError):  # not glibc
        ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim(0)


def _purge(con: Any) -> None:
    """Make DuckDB's allocator give the memory it keeps (freed, still resident) back to the OS. DuckDB has no
    setting for it; changing the thread count purges all of its allocator's arenas (``Allocator::FlushAll`` when
    the task scheduler relaunches its threads; measured with DuckDB 2.0): at 700k ranges, peak RSS 0.39 -> 0.37 GB,
    and the outputs are written from 0.28 GB instead of 0.39 GB. Without that effect in a later DuckDB, only memory
    is lost, and the thread count is the default again either way."""
    con.execute("SET threads = 1")
    con.execute("RESET threads")


def _rss_mb() -> int:
    """Current resident memory of this process in MB (Linux; 0 elsewhere), for the debug log."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096 >> 20
    except OSError:
        return 0


def _directives(stmt: str) -> list[list[str]]:
    """The reader's directives in a statement's comments: ``-- @wait a b`` -> ``["--", "@wait", "a", "b"]``."""
    return [line.split() for line in stmt.splitlines() if line.startswith("-- @")]


def _params(stmt: str, values: dict[str, Any]) -> dict[str, Any]:
    """The ``$name`` parameters of ``stmt`` (outside comments) bound from ``values``. Raises ``ValueError`` for a
    parameter ``values`` lacks (a mistake in the SQL file)."""
    code = "\n".join(line.split("--", 1)[0] for line in stmt.splitlines())
    names = set(re.findall(r"\$(\w+)", code))
    if names - values.keys():
        raise ValueError(f"nsys_attribution.sql: no value for ${', $'.join(sorted(names - values.keys()))}")
    return {n: values[n] for n in names}


def _execute(con: Any, stmt: str, params: dict[str, Any] | None = None) -> None:
    """Run one statement (with ``$name`` parameters), logging its time and the resident memory when debugging."""
    t0 = time.perf_counter()
    con.execute(stmt, params) if params else con.execute(stmt)
    if log.isEnabledFor(logging.DEBUG):  # per statement: time, resident memory, the statement's start
        log.debug("%.3f s  %4d MB  %s", time.perf_counter() - t0, _rss_mb(), " ".join(stmt.split())[:60])


def _statements(sql: str) -> list[str]:
    """The statements of an SQL file (split on ``;`` at line ends; comments kept)."""
    out, cur = [], []
    for line in sql.splitlines():
        cur.append(line)
        if line.rstrip().endswith(";") and not line.lstrip().startswith("--"):
            stmt = "\n".join(cur).strip()
            if any(x.strip() and not x.strip().startswith("--") for x in cur):
                out.append(stmt)
            cur = []
    return out
