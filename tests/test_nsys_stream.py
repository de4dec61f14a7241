"""The SQLite reader streams each source table into DuckDB in batches of 64k rows (issue 14: memory bounded): a
table longer than one batch, with text that is not valid UTF-8 only in a later batch, reads exactly as a short one.
Built in code from the tiny export of test_attribution; no fixture needed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

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


def test_a_table_of_several_batches_with_invalid_utf8_in_a_later_one(tmp_path: Path) -> None:
    """70,001 marks after the tiny export's NVTX rows, the last (row 70,011: the second batch) not valid UTF-8:
    every range is read, that one with U+FFFD and its bytes in hex, no other range has hex, and the kernels'
    attribution is that of the tiny export."""
    long = tmp_path / "long.sqlite"
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
