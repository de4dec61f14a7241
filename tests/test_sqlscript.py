"""rooflake.ingest.sqlscript, the runner of the readers' .sql files, and the files themselves: statements split by
DuckDB's parser, each bound to exactly the parameters it uses, run in order; every file documents its output. No
fixture needed."""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

import duckdb
import pytest

from rooflake.ingest import sqlscript

NSYS_FILES = sorted(
    p.name for p in resources.files("rooflake.ingest").joinpath("nsys").iterdir() if p.name.endswith(".sql")
)


def _stmt(sql: str):
    (stmt,) = duckdb.extract_statements(sql)
    return stmt


def test_bind_takes_only_the_statement_s_own_parameters() -> None:
    """DuckDB refuses parameters a statement does not use; those named in comments do not count."""
    row = {"slice": 0, "t": 5, "t_lo": 1, "t_hi": 2}
    stmt = _stmt("SELECT * FROM x WHERE t >= $t_lo -- before $t_hi\n  AND t < $t_hi")
    assert sqlscript.bind(stmt, row) == {"t_lo": 1, "t_hi": 2}
    assert sqlscript.bind(_stmt("SELECT $t"), row) == {"t": 5}
    assert sqlscript.bind(_stmt("SELECT 1 -- $t_mid"), row) == {}


def test_a_parameter_without_a_value_is_named() -> None:
    with pytest.raises(ValueError, match=r"f\.sql: no value for \$t_mid"):
        sqlscript.bind(_stmt("SELECT $t_mid, $t"), {"t": 1}, "f.sql")


def test_arrow_returns_the_last_statement_as_arrow() -> None:
    """sweep_launches.sql (a query with $lo and $hi): the launch calls on the threads of lanes $lo to $hi that have a
    launch time (in no particular order)."""
    con = duckdb.connect(config={"preserve_insertion_order": False})
    con.execute(
        "CREATE TABLE ops AS SELECT * FROM (VALUES (4, 7, 50), (2, 7, 40), (6, 8, 10), (8, 7, NULL), (0, 9, 5)) "
        "AS t(uid, launch_thread, launch_start_ns)"
    )
    con.execute(
        "CREATE TABLE lanes AS SELECT * FROM (VALUES (7, 0, 3, 1), (8, 0, 1, 2), (9, 0, 1, 3)) "
        "AS t(thread, domain_id, n, lane)"
    )
    got = sqlscript.arrow(con, "nsys/sweep_launches.sql", lo=1, hi=2)
    assert sorted(got.to_pylist(), key=lambda r: (r["thread"], r["uid"])) == [
        {"thread": 7, "uid": 2, "t": 40},
        {"thread": 7, "uid": 4, "t": 50},
        {"thread": 8, "uid": 6, "t": 10},
    ]
    with pytest.raises(ValueError, match=r"\$hi"):
        sqlscript.arrow(con, "nsys/sweep_launches.sql", lo=1)


def test_arrow_runs_the_statements_before_the_last() -> None:
    """stacks.sql (three CREATEs, then a query): the tables are made before the query's result comes back."""
    con = duckdb.connect()
    con.execute("CREATE TABLE walk AS SELECT * FROM (VALUES (1, 0), (2, 3)) AS t(id, depth)")
    got = sqlscript.arrow(con, "nsys/stacks.sql")
    assert got.to_pylist() == [{"max_depth": 3}]
    made = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()}
    assert {"path_nodes", "range_pid", "level_prev"} <= made


def test_the_nsys_reader_caps_duckdbs_threads_and_purge_keeps_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a machine with many cores the reader's connection runs MAX_THREADS threads (each holds buffers under the
    one memory limit: 64 ran out of memory), and nsys/purge.sql sets that count again, not DuckDB's default."""
    from rooflake.ingest import nsys_export, nsys_sqlite

    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    con = nsys_sqlite.connect(str(tmp_path))
    threads = "SELECT current_setting('threads')"
    assert con.execute(threads).fetchall() == [(nsys_sqlite.MAX_THREADS,)]
    con.execute("SET threads = 3")
    nsys_export.purge(con)
    assert con.execute(threads).fetchall() == [(3,)]
    con.close()


def test_batches_streams_the_last_statement_in_batches() -> None:
    """sweep_ranges.sql as a reader of batches of at most batch_rows rows: every push/pop range of lanes $lo to
    $hi, with its lane, end 0 and open 1 where never popped, and its position."""
    con = duckdb.connect(config={"preserve_insertion_order": False})
    con.execute(
        "CREATE TABLE push_pop AS SELECT i AS range_id, i AS start_ns, CASE WHEN i % 2 = 0 THEN i + 1 END AS end_ns, "
        "7 + i % 3 AS thread, 0 AS domain_id, 2 * i AS src_pos FROM range(5000) AS t(i)"
    )
    con.execute(
        "CREATE TABLE lanes AS SELECT * FROM (VALUES (7, 0, 1667, 1), (8, 0, 1667, 2), (9, 0, 1666, 3)) "
        "AS t(thread, domain_id, n, lane)"
    )
    reader = sqlscript.batches(con, "nsys/sweep_ranges.sql", 1000, lo=1, hi=2)
    got = list(reader)
    assert len(got) >= 4 and all(b.num_rows <= 1000 for b in got)
    rows = sorted(
        (r["range_id"], r["lane"], r["end_ns"], r["open"], r["src_pos"]) for b in got for r in b.to_pylist()
    )
    want = [(i, 1 + i % 3, i + 1 if i % 2 == 0 else 0, i % 2, 2 * i) for i in range(5000) if i % 3 < 2]
    assert rows == want


def test_run_returns_the_last_statement_s_result() -> None:
    con = duckdb.connect()
    sqlscript.run(con, "nsys/macros.sql")
    assert con.execute("SELECT nvtx_range_kind(59), nvtx_range_kind(71), nvtx_range_kind(65)").fetchone() == (
        "push_pop",
        "start_end",
        "mark",
    )
    assert con.execute("SELECT nvtx_range_kind(75), nvtx_is_domain_create(75)").fetchone() == (None, True)
    assert con.execute(
        "SELECT range_name('aten::mm, op_id = 7', pytorch_cut('aten::mm, op_id = 7'))"
    ).fetchone() == ("aten::mm",)


@pytest.mark.parametrize("name", NSYS_FILES)
def test_every_file_says_what_it_gives(name: str) -> None:
    """Each file starts with a comment naming it and what it does, and has a `-- Columns:` block; the statement
    files (not the templates, whose `{slots}` Python fills) parse."""
    text = resources.files("rooflake.ingest").joinpath("nsys", name).read_text(encoding="utf-8")
    assert text.startswith(f"-- {name[:-4]}: ")
    assert "\n-- Columns:" in text
    if "Template slot" not in text:
        assert sqlscript.statements(f"nsys/{name}")
