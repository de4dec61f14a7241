"""The SQLite reader streams each source table in batches of 64k rows into a Parquet file that DuckDB reads (issue
14: memory bounded): a table longer than one batch, with text that is not valid UTF-8 only in a later batch, reads
exactly as a short one; the files hold the export's rows in its order, with the encodings the reader chose. Built in
code from the tiny export of test_attribution; no fixture needed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from test_attribution import KERNELS, NVTX, A, build_export

from rooflake import queries
from rooflake.pipeline import ingest_file
from rooflake.store import Store

MARKS = 70_000  # NVTX marks added after the tiny export's rows: its NVTX table is two batches long


def _kernels(con: object, like: str) -> list[tuple]:
    return con.execute(  # type: ignore[attr-defined]
        "SELECT k.correlation_id, k.name, k.nvtx_path, k.attribution, k.start_ns FROM kernels AS k "
        "JOIN runs AS r USING (run_id) WHERE r.source_path LIKE ? ORDER BY k.correlation_id",
        [like],
    ).fetchall()


def _long_export(long: Path) -> None:
    """The tiny export with MARKS marks after its NVTX rows and one more whose text is not valid UTF-8."""
    build_export(long)
    db = sqlite3.connect(long)
    db.executemany(
        "INSERT INTO NVTX_EVENTS VALUES (?, NULL, 34, ?, ?, NULL, 0, NULL)",
        [(5_000 + i, f"tick{i}", A) for i in range(MARKS)],
    )
    db.execute(
        "INSERT INTO NVTX_EVENTS VALUES (90000, NULL, 34, CAST(X'7469636bff' AS TEXT), ?, NULL, 0, NULL)", [A]
    )
    db.commit()
    db.close()


def test_a_table_of_several_batches_with_invalid_utf8_in_a_later_one(tmp_path: Path) -> None:
    """70,001 marks after the tiny export's NVTX rows, the last (row 70,011: the second batch) not valid UTF-8:
    every range is read, that one with U+FFFD and its bytes in hex, no other range has hex, and the kernels'
    attribution is that of the tiny export."""
    long = tmp_path / "long.sqlite"
    _long_export(long)
    short = tmp_path / "short.sqlite"
    build_export(short)
    store = tmp_path / "store"
    for path in (long, short):
        assert ingest_file(path, store).status == "ingested"
    con = queries.connect(Store(store))
    n_ranges = len(NVTX) - 1  # the domain-create row is no range
    counts = con.execute(
        "SELECT count(*), count(invalid_utf8_hex) FROM ranges JOIN runs USING (run_id) "
        "WHERE runs.source_path LIKE '%long.sqlite'"
    ).fetchone()
    assert counts == (n_ranges + MARKS + 1, 1)
    bad = con.execute(
        "SELECT text, kind, start_ns, invalid_utf8_hex FROM ranges WHERE invalid_utf8_hex IS NOT NULL"
    ).fetchall()
    assert bad == [("tick\ufffd", "mark", 90000, {"text": "7469636bff"})]
    assert con.execute("SELECT count(*) FROM ranges WHERE text = 'tick69999'").fetchone() == (1,)
    long_kernels = _kernels(con, "%long.sqlite")
    assert len(long_kernels) == len(KERNELS)
    assert long_kernels == _kernels(con, "%short.sqlite")


def test_an_unfinished_stream_does_not_hide_the_error(tmp_path: Path) -> None:
    """A load that DuckDB stops half-way (out of memory or disk, Ctrl-C) leaves the export's batch stream
    unfinished: closing the export closed its connection with the statement still open, and ADBC's RuntimeError
    ("Cannot close AdbcConnection with open AdbcStatement") replaced the real error."""
    from rooflake.ingest import nsys_export

    path = tmp_path / "e.sqlite"
    build_export(path)
    db = nsys_export.Export(path)
    stream = db.batches("SELECT * FROM NVTX_EVENTS", "its NVTX events")
    assert next(stream).num_rows == 0 and next(stream).num_rows > 0  # the schema, then the first batch
    db.close()


def test_each_source_is_a_parquet_file_of_the_exports_rows(tmp_path: Path) -> None:
    """load writes each source the export has to <name>.parquet: its rows in the export's order (src_row = SQLite's
    rowid, row i at position i), one row group per 64k-row batch, uncompressed, without statistics, the per-row
    columns delta-encoded and the others in a dictionary; the view over it (nsys/parquet_view.sql with the select
    list load returns) reads the rows back; a table the export lacks gives no file and a list of NULLs."""
    import duckdb
    import pyarrow.parquet as pq

    from rooflake.ingest import nsys_sqlite

    long = tmp_path / "long.sqlite"
    _long_export(long)
    loaded = nsys_sqlite.load(long, ["nvtx_raw", "ms_raw"], tmp_path)
    assert loaded["ms_raw"][1] is False and not (tmp_path / "ms_raw.parquet").exists()
    assert "NULL::BIGINT AS src_row" in loaded["ms_raw"][0]
    columns, present = loaded["nvtx_raw"]
    meta = pq.ParquetFile(tmp_path / "nvtx_raw.parquet").metadata
    assert present and meta.num_rows == len(NVTX) + MARKS + 1
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [65536, meta.num_rows - 65536]
    chunks = {
        meta.row_group(0).column(i).path_in_schema: meta.row_group(0).column(i)
        for i in range(meta.num_columns)
    }
    assert {c.compression for c in chunks.values()} == {"UNCOMPRESSED"}
    assert not any(c.is_stats_set for c in chunks.values())
    for name in ("src_row", "start", "end"):
        assert "DELTA_BINARY_PACKED" in chunks[name].encodings, name
    for name in ("text_inline", "thread", "event_type"):
        assert chunks[name].has_dictionary_page, name
    con = duckdb.connect()
    con.execute(
        f"CREATE VIEW v AS SELECT {columns}, a.file_row_number AS pos "
        f"FROM read_parquet('{tmp_path / 'nvtx_raw.parquet'}', file_row_number = true) AS a"
    )
    src = sqlite3.connect(long)
    src.text_factory = lambda b: b.decode(errors="replace")
    want = src.execute("SELECT rowid, start, end, text FROM NVTX_EVENTS ORDER BY rowid").fetchall()
    got = con.execute('SELECT src_row, start, "end", text_inline, pos FROM v ORDER BY pos').fetchall()
    assert [g[:3] for g in got] == [w[:3] for w in want]
    assert [g[4] for g in got] == list(range(len(want)))  # the position is the row's place in the export
    assert [g[3] for g in got] == [w[3] for w in want] and got[-1][3] == "tick\ufffd"


def test_the_readers_connection_reads_parquet_one_column_chunk_at_a_time(tmp_path: Path) -> None:
    """DuckDB's Parquet prefetching reads a whole row group per thread in one allocation (~11 MB for the kernels),
    which ran the x8 copy out of memory at the 300 MB limit: the reader's connection turns it off."""
    from rooflake.ingest import nsys_sqlite

    con = nsys_sqlite.connect(str(tmp_path))
    try:
        assert con.execute("SELECT current_setting('disable_parquet_prefetching')").fetchall() == [(True,)]
    finally:
        con.close()


def test_the_output_tables_are_written_with_at_most_two_duckdb_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With 4 threads the x8 copy's kernels write peaked 30-60 MiB higher in about half the runs
    (nsys/write_threads.sql): on a machine of 8 cores the attribution runs on 4 DuckDB threads and the tables
    open_export yields are read with WRITE_THREADS (2); they hold the tiny export's rows."""
    from rooflake.ingest import nsys_sqlite

    monkeypatch.setattr(nsys_sqlite.os, "cpu_count", lambda: 8)
    path = tmp_path / "e.sqlite"
    build_export(path)
    with nsys_sqlite.open_export(path, run_id="r") as out:
        con = out["kernels"].con
        assert con.execute("SELECT current_setting('threads')").fetchall() == [(nsys_sqlite.WRITE_THREADS,)]
        assert nsys_sqlite.WRITE_THREADS == 2 < nsys_sqlite.MAX_THREADS
        assert out["kernels"].to_arrow().num_rows == len(KERNELS)


def test_load_stops_at_the_next_batch_once_told(tmp_path: Path) -> None:
    """load checks its stop event before each batch: set, it raises Stopped (Begun.halt: the run is given up)."""
    import threading

    from rooflake.ingest import nsys_sqlite

    long = tmp_path / "long.sqlite"
    _long_export(long)
    stop = threading.Event()
    stop.set()
    with pytest.raises(nsys_sqlite.Stopped, match="nvtx_raw: stopped before the end of its table"):
        nsys_sqlite.load(long, ["nvtx_raw"], tmp_path, stop)


def test_the_biggest_source_is_read_while_the_file_is_hashed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ingest_file begins an SQLite export's read (nsys_begin.Begun: its biggest table on a second thread) before
    it hashes the file: the hash waits here until that read has started, and the run is then ingested whole."""
    import threading

    from rooflake import pipeline
    from rooflake.ingest import nsys_begin, nsys_sqlite

    monkeypatch.setattr(nsys_begin, "BEGIN_BYTES", 0)  # (begun at any size)
    started = threading.Event()
    load, sha = nsys_sqlite.load, pipeline.file_sha256

    def loading(*args: object) -> object:
        started.set()
        return load(*args)  # type: ignore[arg-type]

    def hashing(path: Path) -> str:
        assert started.wait(30), "the biggest source was not being read while the file was hashed"
        return sha(path)

    monkeypatch.setattr(nsys_sqlite, "load", loading)
    monkeypatch.setattr(pipeline, "file_sha256", hashing)
    long = tmp_path / "long.sqlite"
    _long_export(long)
    res = ingest_file(long, tmp_path / "store")
    assert res.status == "ingested" and res.ranges is not None and res.ranges > MARKS


def test_a_run_the_store_holds_gives_up_the_begun_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Re-ingesting an export the store holds: status exists, the begun read stopped and its temporary folder
    removed, the store's files as they were."""
    import tempfile

    from rooflake.ingest import nsys_begin

    monkeypatch.setattr(nsys_begin, "BEGIN_BYTES", 0)  # (begun at any size)
    long = tmp_path / "long.sqlite"
    _long_export(long)
    store = tmp_path / "store"
    assert ingest_file(long, store).status == "ingested"
    before = sorted((p.relative_to(store), p.stat().st_mtime_ns) for p in store.rglob("*"))
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    assert ingest_file(long, store).status == "exists"
    assert list(temp.iterdir()) == []
    assert sorted((p.relative_to(store), p.stat().st_mtime_ns) for p in store.rglob("*")) == before


def test_only_a_big_sqlite_file_is_begun(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """begin yields None for an export under BEGIN_BYTES (the hash would be over before the second thread had
    imported its modules) and for files of other formats; a Begun for an export at least that big."""
    from rooflake.ingest import begin, nsys_begin

    long = tmp_path / "long.sqlite"
    _long_export(long)
    other = tmp_path / "x.json"
    other.write_text('{"traceEvents": []}')
    assert long.stat().st_size < nsys_begin.BEGIN_BYTES
    for path in (long, other, tmp_path / "missing.sqlite"):
        with begin(path) as begun:
            assert begun is None, path
    monkeypatch.setattr(nsys_begin, "BEGIN_BYTES", long.stat().st_size)
    with begin(long) as begun:
        assert isinstance(begun, nsys_begin.Begun) and begun.checked()[1] == "nvtx_raw"
    with begin(other) as begun:
        assert begun is None


def test_a_begun_file_that_is_no_export_fails_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The begun check's error (an SQLite database that is not an export) is the ingest's one Error line, raised
    after the hash as before, the store untouched."""
    from rooflake.ingest import nsys_begin
    from rooflake.schema import InputError

    monkeypatch.setattr(nsys_begin, "BEGIN_BYTES", 0)
    path = tmp_path / "plain.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE t (x INTEGER)")
    db.commit()
    db.close()
    with pytest.raises(
        InputError, match=r"plain\.sqlite: an SQLite database, but not an Nsight Systems export"
    ):
        ingest_file(path, tmp_path / "store")
    assert not (tmp_path / "store").exists() or not any((tmp_path / "store").rglob("*.parquet"))
