"""``rl sql -f json`` without pyarrow (issue 14): :func:`rooflake.schema.duck.fetch_pylist` gives the values
``pyarrow.Table.to_pylist`` gave for the same result, so the JSON bytes are those of the Arrow path, on every table and
named view of real stores (Nsight Compute and Nsight Systems) and on every kind of value; types whose values differ
between DuckDB's client and pyarrow still go through Arrow."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from typer.testing import CliRunner

from rooflake import queries
from rooflake.cli import app
from rooflake.cli.output import write_table
from rooflake.schema.duck import Rows, fetch_arrow, fetch_pylist
from rooflake.store import Store

from _support import FIXTURES, fixture

NSYS_EXPORT = FIXTURES / "nsys" / "MohanadOdema__DLProf__nsys_profile.sqlite"  # kernels and NVTX ranges
TABLES = ["runs", "kernels", "metrics", "ceilings", "ranges", "memops", "coverage", "estimates"]


def _json(table: pa.Table | Rows) -> bytes:
    """What ``rl sql -f json`` writes for ``table``."""
    with tempfile.TemporaryDirectory() as d:
        write_table(table, "json", Path(d) / "out.json")
        return (Path(d) / "out.json").read_bytes()


def _norm(v: object) -> object:
    """``v`` with NaN as a string (NaN equals nothing, itself included) and a datetime with its UTC offset."""
    if isinstance(v, float) and v != v:
        return "NaN"
    if isinstance(v, list | tuple):
        return [_norm(x) for x in v]
    if isinstance(v, dict):
        return {k: _norm(x) for k, x in v.items()}
    if hasattr(v, "utcoffset"):
        return (v, v.utcoffset())
    return v


def _values(rows: Rows) -> object:
    return _norm([dict(zip(rows.names, r, strict=True)) for r in rows.rows])


def _same(store: Path, sql: str) -> Rows:
    """``sql``'s JSON through Rows equals its JSON through Arrow (rows in one order: ORDER BY ALL); the Rows."""
    ordered = f"SELECT * FROM ({sql}) ORDER BY ALL"
    arrow = queries.execute(Store(store), ordered)
    rows = queries.execute(Store(store), ordered, as_pylist=True)
    assert isinstance(rows, Rows), (sql, rows.schema if isinstance(rows, pa.Table) else rows)
    assert rows.names == tuple(arrow.column_names)
    assert _values(rows) == _norm(arrow.to_pylist())
    assert _json(rows) == _json(arrow), sql
    return rows


@pytest.fixture(scope="module")
def nsys_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("rows_nsys") / "store"
    r = CliRunner().invoke(app, ["ingest", str(NSYS_EXPORT), "--store", str(root)])
    assert r.exit_code == 0, r.stderr
    return root


def _objects() -> list[str]:
    return TABLES + [n for n in queries.names() if not queries.parameters(n)]


@pytest.mark.parametrize("name", _objects())
def test_every_table_and_view_of_ncu_runs(fixture_store: Path, name: str) -> None:
    rows = _same(fixture_store, f"SELECT * FROM {name}")
    if name in ("runs", "kernels", "kernel_roofline"):
        assert rows.rows, name  # real rows were compared


@pytest.mark.parametrize("name", _objects())
def test_every_table_and_view_of_an_nsys_run(nsys_store: Path, name: str) -> None:
    rows = _same(nsys_store, f"SELECT * FROM {name}")
    if name in ("runs", "kernels", "ranges"):
        assert rows.rows, name


def test_parameterized_named_query(fixture_store: Path) -> None:
    run = queries.execute(Store(fixture_store), "SELECT min(run_id) AS r FROM runs").column("r")[0].as_py()
    rows = _same(fixture_store, f"SELECT * FROM time_roofline('{run}', 1000)")
    assert rows.rows


# every kind of value: edge values of the types Rows carry (NaN, infinities, -0.0, NULL, empty and nested maps,
# decimals, blobs, repeated column names, time stamps before 1970 and with or without microseconds)
VALUES = [
    "true, false, NULL::BOOLEAN",
    "(-128)::TINYINT, 32767::SMALLINT, (-2147483648)::INTEGER, (-9223372036854775808)::BIGINT",
    "255::UTINYINT, 65535::USMALLINT, 4294967295::UINTEGER, 18446744073709551615::UBIGINT",
    "'nan'::DOUBLE, 'inf'::DOUBLE, '-inf'::DOUBLE, -0.0::DOUBLE, 1e308, 5e-324, 0.1::FLOAT, 'nan'::FLOAT",
    "3.14::DECIMAL(10,2), (-0.001)::DECIMAL(18,3), 12345678901234567890.123::DECIMAL(38,3), 0::DECIMAL(4,1)",
    "'héllo \"q\" \\ \n\t\x1b', '', NULL::VARCHAR, '{\"a\": 1}'::JSON, 'a'::ENUM('a', 'b')",
    "'\\x00ab\\xff'::BLOB, ''::BLOB, NULL",
    "MAP {'a': 1, 'b': NULL}, MAP {}::MAP(VARCHAR, INTEGER), MAP {1: 'x'}, NULL::MAP(VARCHAR, VARCHAR)",
    "[MAP {'a': 1.5}], [MAP {}::MAP(VARCHAR, DOUBLE)], {'m': MAP {'k': ['nan'::DOUBLE]}, 'n': NULL::INTEGER}",
    "MAP {'k': [1, 2]}, MAP {'k': {'x': MAP {'y': 1}}}, [[1, 2], [], NULL], []::INTEGER[], [NULL]",
    "{'a': 1, 'b': [1.5, 'inf'::DOUBLE]}, [{'x': 1, 'y': 'z'}], NULL::STRUCT(a INTEGER)",
    "1 AS a, 2 AS a, 'x' AS b",
    "TIMESTAMP '2024-03-10 12:34:56', TIMESTAMP '1969-07-20 20:17:40.000001', NULL::TIMESTAMP",
    "TIMESTAMPTZ '2024-03-10 12:34:56.789+00', TIMESTAMPTZ '1900-01-01 00:00:00+00', NULL::TIMESTAMPTZ",
]


@pytest.mark.parametrize("zone", ["Etc/UTC", "America/New_York", "Asia/Kolkata"])
@pytest.mark.parametrize("select", VALUES)
def test_every_kind_of_value(select: str, zone: str) -> None:
    con = duckdb.connect()
    con.execute(f"SET TimeZone = '{zone}'")
    sql = f"SELECT {select}"
    rows, arrow = fetch_pylist(con, sql), fetch_arrow(con, sql)
    assert isinstance(rows, Rows)
    assert _values(rows) == _norm(arrow.to_pylist())
    assert _json(rows) == _json(arrow)


def test_a_repeated_hour_keeps_its_offset() -> None:
    """2024-11-03 01:30 happens twice in New York: each instant keeps its own offset (fold), as pyarrow gives it."""
    con = duckdb.connect()
    con.execute("SET TimeZone = 'America/New_York'")
    sql = "SELECT TIMESTAMPTZ '2024-11-03 05:30:00+00' AS a, TIMESTAMPTZ '2024-11-03 06:30:00+00' AS b"
    rows = fetch_pylist(con, sql)
    assert _json(rows) == _json(fetch_arrow(con, sql))
    assert json.loads(_json(rows)) == [{"a": "2024-11-03T01:30:00-04:00", "b": "2024-11-03T01:30:00-05:00"}]


@pytest.mark.parametrize(
    "select",
    [
        "170141183460469231731687303715884105727::HUGEINT",  # Arrow: a Decimal, written as a string
        "DATE '2024-03-10'",
        "TIME '12:34:56.5'",
        "'2024-03-10 12:34:56.123456789'::TIMESTAMP_NS",
        "[1, 2, 3]::INTEGER[3]",  # DuckDB: a tuple
        "row(1, 'x')",
        "INTERVAL 1 DAY",
        "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::UUID",
        "[TIMESTAMPTZ '2024-01-01 00:00:00+00']",  # a time stamp inside a list
        "MAP {'k': DATE '2024-01-01'}",
    ],
)
def test_other_types_go_through_arrow(select: str) -> None:
    con = duckdb.connect()
    sql = f"SELECT 1 AS n, {select} AS v"
    got = fetch_pylist(con, sql)
    assert isinstance(got, pa.Table)
    assert _json(got) == _json(fetch_arrow(con, sql))


def test_statement_without_result() -> None:
    con = duckdb.connect()
    assert (
        _json(fetch_pylist(con, "CREATE TABLE t (a INTEGER)"))
        == _json(fetch_arrow(con, "DROP TABLE t"))
        == b"[]\n"
    )


@pytest.mark.parametrize("value", ["'infinity'::TIMESTAMPTZ", "'-infinity'::TIMESTAMP"])
def test_an_infinite_time_stamp_is_an_error_not_a_traceback(fixture_store: Path, value: str) -> None:
    """pyarrow fails on it with OverflowError (a traceback); JSON has no text for it: one Error line, exit 1."""
    with pytest.raises(OverflowError):
        fetch_arrow(duckdb.connect(), f"SELECT {value} AS t").to_pylist()
    r = CliRunner().invoke(app, ["sql", f"SELECT {value} AS t", "--store", str(fixture_store), "-f", "json"])
    assert r.exit_code == 1
    assert r.stderr.startswith("Error: SQL failed: ") and "infinite" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_sql_json_is_the_arrow_path_output(fixture_store: Path) -> None:
    """The command's bytes: rl sql -f json equals the Arrow path's JSON of the same statement."""
    sql = "SELECT * FROM runs ORDER BY run_id"
    r = CliRunner().invoke(app, ["sql", sql, "--store", str(fixture_store), "-f", "json"])
    assert r.exit_code == 0, r.stderr
    assert r.stdout_bytes == _json(queries.execute(Store(fixture_store), sql))
    assert len(json.loads(r.stdout)) > 1


def test_sql_json_imports_no_pyarrow(tmp_path: Path) -> None:
    store = tmp_path / "store"
    code = "import sys; from rooflake.cli import main; sys.argv[0] = 'rl'; main()"
    ingest = [sys.executable, "-c", code, "ingest", str(fixture("AveryClapp__ESMM-Research__profile_output"))]
    assert subprocess.run([*ingest, "--store", str(store)], capture_output=True, timeout=300).returncode == 0
    sql = "SELECT * FROM kernel_roofline"
    p = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code, "sql", sql, "--store", str(store), "-f", "json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    mods = {
        ln.rsplit("|", 1)[1].strip().split(".")[0]
        for ln in p.stderr.splitlines()
        if ln.startswith("import time:")
    }
    assert "duckdb" in mods and not mods & {"pyarrow", "numpy", "polars", "pandas"}, sorted(mods)
    assert len(json.loads(p.stdout)) > 0


def test_a_step_fetched_as_pylist(fixture_store: Path) -> None:
    """``queries.fetch(..., as_pylist=True)``: a run's ``runs`` row (a TIMESTAMPTZ, a map) as ``to_pylist`` gives it."""
    con = queries.connect(Store(fixture_store))
    run = queries.execute(Store(fixture_store), "SELECT max(run_id) AS r FROM runs").column("r")[0].as_py()
    rows = queries.fetch(con, "run_info", {"run_id": run}, as_pylist=True)
    assert isinstance(rows, Rows) and len(rows.rows) == 1
    assert _values(rows) == _norm(queries.fetch(con, "run_info", {"run_id": run}).to_pylist())


def test_the_terminal_table_shows_a_repeated_hour_in_its_own_zone() -> None:
    """01:30 happens twice in New York on 2024-11-03: the table shows EDT, then EST (the local time's fold, from the
    instant), as polars showed it; a zone without such hours (Etc/UTC) is as before."""
    from rooflake.cli.output import render_rows
    from rooflake.schema.duck import fetch_rows

    con = duckdb.connect()
    sql = (
        "SELECT * FROM (VALUES (TIMESTAMPTZ '2024-11-03 05:30:00+00'), (TIMESTAMPTZ '2024-11-03 06:30:00+00'), "
        "(NULL), ('infinity'::TIMESTAMPTZ)) t(ts)"
    )
    con.execute("SET TimeZone = 'America/New_York'")
    table = render_rows(fetch_rows(con, sql))
    assert "2024-11-03 01:30:00 EDT" in table and "2024-11-03 01:30:00 EST" in table, table
    con.execute("SET TimeZone = 'Etc/UTC'")
    table = render_rows(fetch_rows(con, sql))
    assert "2024-11-03 05:30:00 UTC" in table and "2024-11-03 06:30:00 UTC" in table, table


def test_a_time_stamp_python_cannot_hold_in_the_zone_is_an_error_or_its_text() -> None:
    """Year 1 UTC is year 0 in New York, which Python's datetime cannot hold: `-f json` (here and on pyarrow's
    path alike) raised OverflowError; now one QueryError, which the CLI prints as one Error line. The terminal table
    shows DuckDB's own text for it and the other column as before (it raised OverflowError too: found in review)."""
    from rooflake.cli.output import render_rows
    from rooflake.schema import QueryError
    from rooflake.schema.duck import fetch_rows

    con = duckdb.connect()
    con.execute("SET TimeZone = 'America/New_York'")
    sql = "SELECT TIMESTAMPTZ '0001-01-01 00:00:00+00' AS t, TIMESTAMPTZ '2020-01-01 00:00:00+00' AS u"
    with pytest.raises(OverflowError):
        fetch_arrow(con, sql).to_pylist()
    with pytest.raises(
        QueryError, match="out of the range of Python's datetime in time zone America/New_York"
    ):
        fetch_pylist(con, sql)
    table = render_rows(fetch_rows(con, sql))
    assert "0001-12-31 (BC) 19:03:58" in table and "2019-12-31 19:00:00 EST" in table, table


def test_nanosecond_time_stamps_are_their_text_in_json(fixture_store: Path) -> None:
    """Python's datetime holds microseconds: pyarrow's to_pylist raises ValueError for TIMESTAMP_NS unless pandas
    is installed (CI's fresh venv has none: a traceback); `-f json` gives Arrow's text, all nine digits, in every
    install, inside lists too."""
    sql = (
        "SELECT '2024-03-10 12:34:56.123456789'::TIMESTAMP_NS AS t, '2024-03-10 12:34:56'::TIMESTAMP_NS AS z, "
        "['2024-03-10 12:34:56.1'::TIMESTAMP_NS] AS l"
    )
    r = CliRunner().invoke(app, ["sql", sql, "--store", str(fixture_store), "-f", "json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout) == [
        {
            "t": "2024-03-10 12:34:56.123456789",
            "z": "2024-03-10 12:34:56.000000000",
            "l": ["2024-03-10 12:34:56.100000000"],
        }
    ]
