"""rooflake.ingest.sqlscript, the runner of the readers' .sql files, and the files themselves: statements split by
DuckDB's parser, each bound to exactly the parameters it uses, run in order; every file documents its output. No
fixture needed."""

from __future__ import annotations

from importlib import resources

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


def test_run_executes_every_statement_in_order_with_its_parameters() -> None:
    """sweep_slice.sql on a lane with a push at 0 and a launch at 5: the launch's innermost range is the push, and
    the lane's state carries over (the same statements the reader runs once per slice)."""
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE lane_events AS SELECT * FROM (VALUES (1, 1::TINYINT, 10::BIGINT, 0::BIGINT, 1, -100::BIGINT, "
        "100::BIGINT), (1, 0::TINYINT, 4::BIGINT, 5::BIGINT, 3, 0::BIGINT, NULL::BIGINT)) AS t(lane, kind, ref, t, "
        "ord, sub, e)"
    )
    con.execute("CREATE TABLE lane_state AS SELECT 1 AS lane, 0 AS level, 0::BIGINT AS seq")
    con.execute(
        "CREATE TABLE open_pushes (lane INTEGER, seq BIGINT, level INTEGER, ref BIGINT, t BIGINT, e BIGINT)"
    )
    con.execute("CREATE TABLE op_inner (uid BIGINT, innermost BIGINT)")
    con.execute("CREATE TABLE pp (range_id BIGINT, depth INTEGER, parent_id BIGINT)")
    sqlscript.run(con, "nsys/sweep_slice.sql", t_lo=0, t_hi=50)
    assert con.execute("SELECT * FROM op_inner").fetchall() == [(4, 10)]
    assert con.execute("SELECT * FROM pp").fetchall() == [(10, 0, None)]
    assert con.execute("SELECT lane, level, seq FROM lane_state").fetchall() == [(1, 1, 2)]
    assert con.execute("SELECT ref FROM open_pushes").fetchall() == [(10,)]  # popped at 100, after the slice
    with pytest.raises(ValueError, match=r"\$t_hi"):
        sqlscript.run(con, "nsys/sweep_slice.sql", t_lo=0)


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
