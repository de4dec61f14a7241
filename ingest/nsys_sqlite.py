"""Reader for Nsight Systems SQLite exports (``nsys export --type sqlite``), any schema version seen so far.

Entry point: :func:`open_export` (``rooflake.ingest.read`` fetches its tables as Arrow). The export's tables are read
through ADBC as a stream of Arrow batches and written to Parquet files in the reader's temporary folder
(:func:`load`, the biggest on a second thread: :class:`rooflake.ingest.nsys_begin.Begun`, which
:func:`rooflake.pipeline.ingest_file` begins before it hashes a big export), which DuckDB then scans as the Parquet
reader's sources (:mod:`rooflake.ingest.nsys_parquet`): no source table is held whole in memory, and DuckDB's memory
limit bounds the rest of the ingest (:data:`MEMORY_LIMIT`). The attribution of every kernel, memcpy and memset to
the NVTX ranges open on its launching thread is DuckDB SQL, the files of ``ingest/nsys/`` run in this order
(:func:`attribute`):

- ``macros``: NVTX event types by name, range names;
- ``ops`` (needs the kernel table): GPU operations in start order; ``launches`` (the API tables): their launch calls;
- ``ranges`` (the NVTX table): ranges, domains, the lanes of the stack sweep; the sweep itself, in numpy
  (:mod:`rooflake.ingest.nsys_sweep`: ``sweep_lanes``, then per group of lanes ``sweep_launches``, ``sweep_ranges``
  and ``sweep_store``, then ``sweep_pp``): each range's depth and parent (by its row's position in the NVTX source,
  which the output joins by position), each operation's innermost range, the ranges on the operations' stacks;
  ``range_names``, ``walk_names``, ``stacks``, ``stack_level`` once per depth, ``paths``,
  ``attribution``: NVTX paths (one per distinct stack) and the attribution of every operation;
- ``output``: the output tables as views, which DuckDB streams as Arrow batches to pyarrow's Parquet writer
  (:class:`rooflake.schema.duck.DuckTable`); ``summary``: the counts.

Between steps, sources no longer needed are deleted and DuckDB's allocator gives back what it keeps (``purge``):
CHANGELOG.md has the memory and time figures this order was tuned for.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa

from rooflake.ingest import nsys_export, nsys_sweep, sqlscript
from rooflake.ingest.flags import flag_summary
from rooflake.ingest.messages import shown
from rooflake.ingest.nsys_begin import Begun
from rooflake.ingest.nsys_export import POSITIONED, SOURCES, quoted
from rooflake.schema import COVERAGE, KERNELS, MEMOPS, RANGES, InputError
from rooflake.schema.duck import DuckTable, conform_select, duck_connect, sql_literal, sql_template

PKG = "rooflake.ingest"
NO_COUNTERS = "NULL: Nsight Systems records no hardware counters (ingest an ncu report of the same program)"
# DuckDB's memory for one export; it spills to a temporary directory beyond. The source tables are Parquet files
# (not held as Arrow in Python memory), and the attribution's big working tables go to a work database file
# (nsys/work_db.sql), so this bounds the whole ingest: the range-heavy copy x8 (1.2M kernels, 5.7M NVTX ranges,
# 720 MB) peaks at ~0.48 GB of resident memory with its Parquet writing (1.94 GB with the sources as Arrow and a 1 GB
# limit); the rest is the interpreter, pyarrow and DuckDB's code (~0.15 GB). The price is CPU time: ~27 CPU s for
# that ingest (29 s with DuckDB writing the Parquet files, 32 s at stop 23, 34-36 s with the stack sweep in SQL,
# 38-40 s before the work database and the path tree; 27 s under a 2 GB limit at 1.3 GB before pyarrow wrote the
# files). The peak follows the limit: 340 MB peaked at 0.51 GB (-0.5 s wall), 380 MB at 0.54 GB. A lower limit does
# not lower the peak: 280 MB for the whole ingest and 260 MB after the sweep each took ~+9 CPU s and still peaked at
# 0.49-0.51 GB. Measured on 2 cores
MEMORY_LIMIT = "300MB"
# DuckDB's threads for one export (at most; fewer on fewer cores): each thread holds its own buffers under the one
# memory limit. With DuckDB's default, one thread per core, the x8 copy ran out of memory in nsys/launches.sql at
# 64 threads (so did stop 31's reader); with 8 it was read and written to the end, with 16 not (2 cores running
# that many threads)
MAX_THREADS = 4
# DuckDB's threads for the writes of the output tables (at most; nsys/write_threads.sql says why)
WRITE_THREADS = 2
# the most rows and bytes of a row group of the ranges' Parquet file (the store's other files: 64k rows or 4 MiB).
# Since the ranges query joins the sweep's results by position (nsys/ranges.sql) it holds no hash table on the
# ranges, and the bigger groups in flight fit: at the x8 copy, pyarrow alone wrote the ranges with 1.54 CPU s
# instead of 2.0 (32 MiB: 1.43) into 61 MB instead of 76; whole ingest, 5 paired runs: 0.95x wall, 0.98x CPU,
# peak 477 against 484 MiB (32 MiB peaked at 490-495)
RANGES_GROUP = (1 << 20, 16 << 20)


class _Sources:
    """The export's source tables as typed DuckDB views (``nsys/parquet_view.sql``) over Parquet files in the
    reader's temporary folder, written from the export one batch at a time (:func:`load`: no whole table in Python
    memory); ``late`` ones are still being written on another thread until :meth:`need` waits for them."""

    def __init__(
        self, con: Any, path: Path, names: list[str], late: dict[str, Future[dict[str, Loaded]]], folder: str
    ) -> None:
        self.con, self.late, self.folder = con, late, Path(folder)
        self.present: dict[str, bool] = {}  # source -> whether the export has its table
        for name, (columns, present) in load(path, names, self.folder).items():
            self._view(name, columns, present)

    def _view(self, name: str, columns: str, present: bool) -> None:
        """The view of source ``name`` as :func:`load` wrote it (:func:`source_view`)."""
        self.present[name] = present
        source_view(self.con, name, columns, self.folder / f"{name}{SUFFIX}" if present else None)

    def need(self, name: str) -> None:
        """Wait for source ``name`` if it is still being written, and make its view. Raises :class:`InputError`
        when it cannot be read."""
        if name in self.late:
            self._view(name, *self.late.pop(name).result()[name])

    def release(self, *names: str) -> None:
        """Delete the files behind ``names`` (their views are dropped by the SQL)."""
        for name in names:
            (self.folder / f"{name}{SUFFIX}").unlink(missing_ok=True)


class Stopped(Exception):
    """:func:`load` was stopped (its caller gave up the ingest: :meth:`Begun.halt`)."""


# a source as load wrote it: (the typed DuckDB select list over its file, aliased a; whether the export has its
# table: without it the list is every column as a typed NULL, and no file is written)
Loaded = tuple[str, bool]
SUFFIX = ".parquet"
# the source columns whose values differ in nearly every row (row ids, times, correlation ids: a dictionary would
# only grow), written DELTA_BINARY_PACKED; every other column is dictionary-encoded. At the x8 copy: NVTX_EVENTS in
# 97 MiB (202 MiB with these plain, 333 MiB with only the text in a dictionary), written in the same CPU time
DELTAS = ("src_row", "start", "end", "correlation_id")


def load(
    path: Path, names: list[str], folder: Path, stop: threading.Event | None = None
) -> dict[str, Loaded]:
    """Write each source ``names`` of the export at ``path`` to ``folder/<name>.parquet`` (:data:`SUFFIX`),
    streamed from the export (:func:`rooflake.ingest.nsys_export.select_stream`: each 64k-row batch a row group,
    none kept), uncompressed, :data:`DELTAS` delta-encoded and the other columns dictionary-encoded, without
    statistics (the attribution scans whole files). Returns source -> :data:`Loaded`. Raises :class:`InputError`
    when the export cannot be read, ``OSError`` when the folder cannot be written, :class:`Stopped` at the first batch
    after ``stop`` is set (the file then holds part of the table)."""
    import pyarrow.parquet as pq

    db = nsys_export.Export(path)
    try:
        tables = db.tables()
        out: dict[str, Loaded] = {}
        for name in names:
            columns, reader = nsys_export.select_stream(db, tables, *SOURCES[name])
            out[name] = (columns, reader is not None)
            if reader is None:
                continue
            deltas = [f.name for f in reader.schema if f.name in DELTAS]
            with pq.ParquetWriter(
                folder / f"{name}{SUFFIX}",
                reader.schema,
                compression="NONE",
                use_dictionary=[f.name for f in reader.schema if f.name not in deltas],
                column_encoding=dict.fromkeys(deltas, "DELTA_BINARY_PACKED"),
                write_statistics=False,
            ) as writer:
                for batch in reader:
                    if stop is not None and stop.is_set():
                        raise Stopped(f"{name}: stopped before the end of its table")
                    writer.write_batch(batch)
        return out
    finally:
        db.close()


def source_view(con: Any, name: str, columns: str, file: Path | None) -> None:
    """Make the view of source ``name`` (:data:`rooflake.ingest.nsys_export.SOURCES`), for both readers: the
    typed select list ``columns`` (alias ``a``) over the Parquet file ``file`` (``nsys/parquet_view.sql``), or,
    when ``file`` is None (the export lacks the table; ``columns`` then types NULLs), over an empty placeholder
    (``nsys/source_view.sql``). A source of :data:`POSITIONED` ends with ``src_pos``: the row's position in the
    file (``file_row_number``, 0-based), NULL in the placeholder."""
    if name in POSITIONED:
        columns += ", a.file_row_number AS src_pos" if file is not None else ", NULL::BIGINT AS src_pos"
    if file is None:
        con.register("no_source_arrow", _NO_SOURCE)
        con.execute(
            sql_template(PKG, "nsys/source_view.sql", view=name, arrow="no_source_arrow", columns=columns)
        )
    else:
        path = sql_literal(str(file), pa.string())
        con.execute(sql_template(PKG, "nsys/parquet_view.sql", view=name, file=path, columns=columns))


_NO_SOURCE = pa.table({"_": pa.nulls(0)})


@contextlib.contextmanager
def open_export(path: str | Path, *, run_id: str, begun: Begun | None = None) -> Iterator[dict[str, Any]]:
    """Open one Nsight Systems SQLite export and attribute its GPU operations to NVTX ranges, in DuckDB.

    Yields ``{"kernels": KERNELS, "memops": MEMOPS, "ranges": RANGES, "coverage": COVERAGE (DuckTables, valid
    inside the ``with`` block: :meth:`DuckTable.write_parquet` streams them to Parquet a few row groups at a time,
    without the whole table in Python memory), "run": dict}``; ``run`` holds producer
    (``nsys <EXPORT_PRODUCT_VERSION>``), source_schema_version (``EXPORT_SCHEMA_VERSION`` or ``none``), gpu_name,
    compute_capability, n_kernels, n_metrics (0), derivation, and the ingest summary of suspicious source rows
    (:func:`rooflake.ingest.flags.flag_summary`: ``flag_counts``, ``warnings``).
    Kernel durations are integer ns (``end - start``) stored exactly; FLOP and byte columns are NULL (nsys has no
    counters) with that reason in ``provenance``. ``begun``: the :class:`Begun` of this ``path``, when the caller
    began it (it stays the caller's to leave), or None to begin here. Raises :class:`InputError` when the file is
    not a readable SQLite export. DuckDB spills to a temporary directory beyond :data:`MEMORY_LIMIT`.
    """
    with contextlib.ExitStack() as stack:
        b = begun if begun is not None else stack.enter_context(Begun(path))
        meta, biggest = b.checked()
        con = connect(str(b.folder))
        try:
            # the biggest source is written on the second thread meanwhile
            late = {biggest: b.loading} if biggest is not None else {}
            src = _Sources(con, b.path, [n for n in SOURCES if n not in late], late, str(b.folder))
            attribute(con, src, shown(path))
            yield outputs(con, meta, src, run_id)
        finally:
            b.halt()  # the writing thread is done before DuckDB is closed and the folder removed
            con.close()


def _threads() -> int:
    """DuckDB's threads for the attribution: :data:`MAX_THREADS`, or fewer on fewer cores."""
    return min(MAX_THREADS, os.cpu_count() or 1)


def connect(spill: str) -> Any:
    """A DuckDB connection for one export's attribution, spilling to the directory ``spill`` beyond
    :data:`MEMORY_LIMIT` (shared by the SQLite and the Parquet reader, :mod:`rooflake.ingest.nsys_parquet`), with
    the work database (``nsys/work_db.sql``: a file in ``spill``) attached, where the attribution's big tables
    go."""
    import duckdb

    con = duck_connect(
        config={
            "threads": _threads(),
            "preserve_insertion_order": False,
            "temp_directory": spill,
            "memory_limit": MEMORY_LIMIT,
            # give freed memory back after each task and bulk free, not past 128/512 MB: -30 to -40 MB of
            # peak RSS at 150k kernels, same time
            "allocator_flush_threshold": "8MB",
            "allocator_bulk_deallocation_flush_threshold": "8MB",
        }
    )
    file = sql_literal(str(Path(spill) / "work.duckdb"), pa.string())
    for stmt in duckdb.extract_statements(sql_template(PKG, "nsys/work_db.sql", file=file)):
        con.execute(stmt)
    sqlscript.run(con, "nsys/source_reads.sql")
    return con


class SourceViews(Protocol):
    """The export's source tables as DuckDB views named as in :data:`rooflake.ingest.nsys_export.SOURCES`
    (``k_raw``, ``nvtx_raw``, ...; each with the typed columns of its column table), however they are bound:
    over the Parquet files this reader writes from the export (:class:`_Sources`) or over a parquetdir export's own
    (:mod:`rooflake.ingest.nsys_parquet`). ``present``: source -> whether the export has its table."""

    present: dict[str, bool]

    def need(self, name: str) -> None:
        """Make sure the view ``name`` exists (wait for a source still being read)."""

    def release(self, *names: str) -> None:
        """The views of ``names`` have been dropped by the SQL: free what backs them."""


def attribute(con: Any, src: SourceViews, source: str) -> None:
    """Run the attribution's steps (the module docstring), each once its sources are read; free the API tables
    once used, and DuckDB's kept memory after the steps that leave much of it. ``source``: the export as errors
    name it. Raises :class:`InputError` when a late source cannot be read, or when a lookup table holds an id
    twice with different values (:func:`lookups`)."""
    lookups(con, source)
    sqlscript.run(con, "nsys/macros.sql")
    src.need("k_raw")
    sqlscript.run(con, "nsys/ops.sql")
    src.need("api_raw0")
    sqlscript.run(con, "nsys/launches.sql")
    src.release("api_raw0", "api_raw1")
    src.need("nvtx_raw")
    sqlscript.run(con, "nsys/ranges.sql")
    nsys_sweep.sweep(con)
    sqlscript.run(con, "nsys/memory_limit.sql", memory_limit=MEMORY_LIMIT)
    nsys_export.purge(con)
    sqlscript.run(con, "nsys/range_names.sql")
    sqlscript.run(con, "nsys/walk_names.sql")
    nsys_export.purge(con)
    (max_depth,) = sqlscript.run(con, "nsys/stacks.sql").fetchall()[0]
    for depth in range(
        max_depth + 1 if max_depth is not None else 0
    ):  # the stacks' tree, one depth at a time
        sqlscript.run(con, "nsys/stack_level.sql", depth=depth)
    for step in ("paths", "attribution"):
        sqlscript.run(con, f"nsys/{step}.sql")
        nsys_export.purge(con)


def lookups(con: Any, source: str) -> None:
    """Make the lookup views ``strings`` (StringIds) and ``gpus`` (TARGET_INFO_GPU) hold one row per id
    (``nsys/lookup_dups.sql``): exact copies of a row are kept once (``nsys/lookup_distinct.sql``). Raises
    :class:`InputError` naming ``source``, the table and the id when an id has rows that differ: which text or GPU
    the export means there is unknown (joined as they were, each kernel, range or launch call stored once per row
    of its id: more kernels than the export holds)."""
    import duckdb

    dups = sqlscript.run(con, "nsys/lookup_dups.sql").fetchall()
    if dups and dups[0][3] > 1:
        table, id_, n_rows, n_values = dups[0]
        raise InputError(
            f"{source}: {table} holds id {id_} in {n_rows} rows with {n_values} different values (an export holds "
            "one row per id: which one is meant is unknown)"
        )
    for view in sorted({table for table, *_ in dups}):
        sql = sql_template(PKG, "nsys/lookup_distinct.sql", view=_LOOKUP_VIEWS[view])
        for stmt in duckdb.extract_statements(sql):
            con.execute(stmt)


# the source view of each lookup table nsys/lookup_dups.sql checks
_LOOKUP_VIEWS = {"StringIds": "strings", "TARGET_INFO_GPU": "gpus"}


def _conformed(con: Any, schema: pa.Schema, view: str, run_id: str) -> str:
    """The SELECT giving output view ``view`` as exactly ``schema``'s columns, with ``run_id``."""
    exprs = {c: quoted(c) for c in con.view(view).columns} | {"run_id": sql_literal(run_id, pa.string())}
    return sql_template(PKG, "nsys/conform.sql", columns=conform_select(schema, exprs), view=view)


def outputs(con: Any, meta: dict[str, str], src: SourceViews, run_id: str) -> dict[str, Any]:
    """The output tables (DuckTables over ``nsys/output.sql``'s views, each with exactly the columns of its store
    table: kernels KERNELS, memops MEMOPS, ranges RANGES, coverage COVERAGE) and the run's summary (``run``, see
    :func:`open_export`), after :func:`attribute` on the same connection, whose DuckDB threads are then at most
    :data:`WRITE_THREADS` (``nsys/write_threads.sql``)."""
    sqlscript.run(con, "nsys/output.sql")
    sqlscript.run(con, "nsys/write_threads.sql", threads=min(WRITE_THREADS, _threads()))
    summary = sqlscript.run(con, "nsys/summary.sql")
    names = [d[0] for d in summary.description]
    (row,) = summary.fetchall()  # fetchall: DuckDB refuses other work on a connection with rows left unread
    s = dict(zip(names, row, strict=True))
    tidy = nsys_export.trim_heap
    tables = {
        "kernels": DuckTable(
            con, _conformed(con, KERNELS, "kernels_out", run_id), KERNELS, s["n_kernels"], tidy=tidy
        ),
        "memops": DuckTable(
            con, _conformed(con, MEMOPS, "memops_out", run_id), MEMOPS, s["n_memops"], tidy=tidy
        ),
        "ranges": DuckTable(
            con,
            _conformed(con, RANGES, "ranges_out", run_id),
            RANGES,
            s["n_ranges"],
            # every hash join builds on its right side, as written (see nsys/output.sql)
            settings={"disabled_optimizers": "build_side_probe_side"},
            tidy=tidy,
            group=RANGES_GROUP,
        ),
        "coverage": DuckTable(
            con, _conformed(con, COVERAGE, "coverage_sorted", run_id), COVERAGE, s["n_coverage"]
        ),
    }
    counts = sqlscript.run(con, "nsys/flag_counts.sql").fetchall()
    return {**tables, "run": _run(meta, s, src.present["k_raw"]) | flag_summary(counts)}


def _run(meta: dict[str, str], s: dict[str, Any], has_kernel_table: bool) -> dict[str, Any]:
    """The reader's part of the ``runs`` row and of the ingest summary, from the export's metadata and the
    summary ``s`` (``nsys/summary.sql``)."""
    version = meta.get("EXPORT_PRODUCT_VERSION")
    cc = f"{s['cc_major']}.{s['cc_minor']}" if s["cc_major"] is not None else None
    return {
        "source_format": "nsys-sqlite",
        "producer": f"nsys {version}" if version else "nsys (export records no product version)",
        "source_schema_version": meta.get("EXPORT_SCHEMA_VERSION", "none (no META_DATA_EXPORT table)"),
        "command_line": None,
        "host": None,
        "gpu_name": s["gpu_name"],
        "compute_capability": cc,
        "n_kernels": s["n_kernels"],
        "n_metrics": 0,
        "derivation": '{"all": ["' + NO_COUNTERS + '"]}',
        "fp16_convention": None,
        "has_kernel_table": has_kernel_table,
    }
