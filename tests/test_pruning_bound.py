"""A statement that reads no store table binds no file; one whose scan the optimizer drops still reads its table.

In a store read query by query (rooflake.store.database, PRUNE_FROM), each statement is planned over empty
stand-ins. A plan without a stand-in scan used to point every file of every table (an optimizer may drop the scan
of an empty stand-in, and pointing none would then answer from no rows): the ceiling-source step of `rl roofline`,
which reads only the tables its caller gives, bound all 25,000 files of a 10,000-run store (1.3 s). Now DuckDB's
binder says which stand-ins a statement reads through every view and macro (``get_table_names`` while the
stand-ins are in place); a table no scan and no binding names binds no file, one the binder names but no scan
reads binds every file. Stores here are real fixture runs copied under new run ids (as tests/test_pruning.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest
from test_pruning import REPORTS, canonical, copy_runs

from rooflake import queries
from rooflake.schema import RooflineDataError
from rooflake.store import Store, database
from rooflake.store.layout import ALL_TABLES
from rooflake.views.ceilings import MACHINE_CEILINGS, machine_ceilings, run_roofs
from rooflake.views.layers import layers
from rooflake.views.roofline import roofline

from _support import fixture


@pytest.fixture(scope="module")
def many_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A store of 3 fixture reports copied into 9 runs."""
    from rooflake.pipeline import ingest_paths

    src = tmp_path_factory.mktemp("src")
    list(ingest_paths([fixture(r) for r in REPORTS], src, workers=1))
    dst = tmp_path_factory.mktemp("many")
    return dst, copy_runs(src, dst, 9)


@pytest.fixture
def pointed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every file a store's views are pointed at, in a store read query by query (PRUNE_FROM 0)."""
    monkeypatch.setattr(database, "PRUNE_FROM", 0)
    files: list[str] = []
    point = database.Database.point

    def recording(self: database.Database, con: Any, runs: dict[str, Any]) -> None:
        point(self, con, runs)
        files.extend(f for t in ALL_TABLES for f in self.reading(t))

    monkeypatch.setattr(database.Database, "point", recording)
    return files


def test_roofline_and_layers_of_one_run_point_only_its_files(many_runs, pointed) -> None:
    """`rl layers RUN`, and `rl roofline RUN` of a run whose report has its own peaks (the default roofs: no other
    run's ceilings are read), bind that run's files only."""
    root, runs = many_runs
    drawn = 0
    for run in runs[:3]:  # one copy of each report
        pointed.clear()
        assert layers(Store(root), run).table.num_rows > 0
        assert pointed and all(f"run_id={run}/" in f for f in pointed), run
        pointed.clear()
        try:
            view = roofline(Store(root), run)
        except RooflineDataError:  # no DRAM counters, or no ceilings: the machine's other sources were read
            continue
        if set(view.ceilings.column("source").to_pylist()) == {"ncu-report"}:
            drawn += view.points.num_rows > 0
            assert pointed and all(f"run_id={run}/" in f for f in pointed), run
    assert drawn >= 1


def test_a_step_over_given_tables_points_no_file(many_runs, pointed, monkeypatch) -> None:
    root, runs = many_runs
    monkeypatch.setattr(database, "PRUNE_FROM", 10**9)
    whole = run_roofs(Store(root), runs[0]).rows  # read whole: every file bound once
    monkeypatch.setattr(database, "PRUNE_FROM", 0)
    con = queries.connect(Store(root))
    assert con.database.prune and con.database.binds  # DuckDB 2.0's binder names the stand-ins
    report = queries.fetch(con, "run_ceilings", filters={"run_id": runs[0]})
    assert con.database.reading("ceilings") and con.database.reading("metrics") == []
    params = {"run_id": runs[0], "machine": "x", "sources": ["ncu-report"], "primary": "ncu-report"}
    given = {"run_ceiling_rows": report, "machine_ceiling_rows": MACHINE_CEILINGS.empty_table()}
    rows = queries.fetch(con, "source_run_ceilings", params, tables=given)
    assert all(con.database.reading(t) == [] for t in ALL_TABLES)
    assert rows.num_rows > 0 and canonical(rows) == canonical(whole)


def test_a_table_whose_scan_the_optimizer_drops_is_read_whole(many_runs, pointed, monkeypatch) -> None:
    """As if the optimizer dropped every scan of an empty stand-in (no scan in any plan): the binder still names
    the tables, which then bind every file, and the answers are those of the files."""
    root, runs = many_runs
    whole = {
        "count": Store(root).query("SELECT count(*) AS n FROM kernels").to_pylist(),
        "one": queries.execute(Store(root), f"SELECT * FROM kernels WHERE run_id = '{runs[1]}'").num_rows,
    }
    con = Store(root).connect()
    assert con.database.prune and con.database.binds
    monkeypatch.setattr(database, "scan_runs", lambda plan: None)  # after the planner's check
    assert con.execute("SELECT count(*) AS n FROM kernels").fetchall() == [(whole["count"][0]["n"],)]
    assert len(con.database.reading("kernels")) == len(runs)
    assert con.database.reading("metrics") == []  # not named: no file
    rows = con.execute(f"SELECT * FROM kernels WHERE run_id = '{runs[1]}'").fetchall()
    assert len(rows) == whole["one"] > 0
    # a statement over no store table at all binds none, with or without scans
    assert con.execute("SELECT 42").fetchall() == [(42,)]
    assert all(con.database.reading(t) == [] for t in ALL_TABLES)


def test_bound_tables_sees_through_views_and_table_macros() -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE __empty_kernels (run_id VARCHAR, x INTEGER)")
    con.execute("CREATE VIEW k AS SELECT * FROM __empty_kernels")
    con.execute("CREATE MACRO one_run(r) AS TABLE SELECT * FROM k WHERE run_id = r")
    con.register("_shadow_given", pa.table({"a": [1]}))
    con.execute("CREATE TEMP VIEW given AS SELECT * FROM _shadow_given")
    assert database.bound_tables(con, "SELECT * FROM one_run($run)") == {"__empty_kernels"}
    assert database.bound_tables(con, "SELECT * FROM k WHERE false") == {"__empty_kernels"}
    assert database.bound_tables(con, "SELECT a FROM given WHERE a = ?") == set()
    assert database.bound_tables(con, "SELECT * FROM nowhere_such") == {"nowhere_such"}


@pytest.mark.parametrize(
    ("sql", "unbound"),
    [
        ("SELECT $run_id::VARCHAR, ?, $1", "SELECT NULL::VARCHAR, NULL, NULL"),
        ("SELECT '$x→' AS s, \"$y\" -- $z", "SELECT '$x→' AS s, \"$y\" -- $z"),
        ("SELECT 1 WHERE $primary <> 'a' AND b = $$ $q $$", "SELECT 1 WHERE NULL <> 'a' AND b = $$ $q $$"),
        ("SELECT a$b FROM t", "SELECT a$b FROM t"),
    ],
)
def test_parameters_are_unbound_by_the_tokenizer(sql: str, unbound: str) -> None:
    assert database._unbound(sql) == unbound


@pytest.mark.parametrize(
    ("scanned", "named", "kernels", "metrics"),
    [
        (None, None, None, None),  # binder cannot say, no scan: every file (as before)
        (None, set(), frozenset(), frozenset()),  # no store table named: no file
        (None, {"__empty_kernels"}, None, frozenset()),  # named, scan dropped: every file of it
        ({"kernels": frozenset({"a"}), "metrics": frozenset()}, {"__empty_kernels"}, {"a"}, frozenset()),
        ({"kernels": frozenset({"a"}), "metrics": frozenset()}, None, {"a"}, frozenset()),
    ],
)
def test_read_runs(scanned, named, kernels, metrics) -> None:
    got = database.read_runs(scanned, named)
    if scanned is None and named is None:
        assert got is None
        return
    assert got is not None and got["kernels"] == kernels and got["metrics"] == metrics


def test_a_local_table_is_listed_only_when_every_run_is_asked_for(many_runs) -> None:
    """A question about a few runs checks their folders; the folder is listed once, when iterated or counted."""
    root, runs = many_runs
    sources = database.take_sources(root, None)
    kernels = sources.parts["kernels"]
    assert isinstance(kernels, database.Folder)
    assert sources.files("kernels", "partition", frozenset([runs[2], "nope"])) == [kernels.path(runs[2])]
    assert kernels._listed is None  # not listed for one run
    assert kernels.at_least(3) and not kernels.at_least(len(runs) + 1)
    assert sorted(kernels) == sorted(runs) and len(sources.files("kernels", "partition", None)) == len(runs)
    only = database.take_sources(root, runs[:2]).parts["kernels"]
    assert sorted(only) == runs[:2] and runs[3] not in only and runs[1] in only


def test_a_terminal_table_of_a_run_with_a_time_zone_column_keeps_its_rows(many_runs, pointed) -> None:
    """`rl sql "SELECT * FROM runs WHERE run_id = …"` as a table: fetch_rows asked for the connection's time zone
    (runs.ingested_at is TIMESTAMPTZ) between making the statement's relation and running it; that second statement
    bound no file, and the relation, which binds its views when it runs, then read none (an empty table). Also: a
    name that repeats (a self-join) keeps each column's own values."""
    root, runs = many_runs
    sql = "SELECT a.run_id, a.ingested_at, b.ingested_at FROM runs a JOIN runs b USING (run_id) WHERE run_id = $r"
    arrow = queries.execute(Store(root), sql, {"r": runs[1]})
    rows = queries.execute(Store(root), sql, {"r": runs[1]}, as_rows=True)
    assert arrow.num_rows == 1 and len(rows.rows) == 1
    assert rows.names == ("run_id", "ingested_at", "ingested_at") and rows.zone
    assert rows.rows[0][0] == runs[1] and rows.rows[0][1] == rows.rows[0][2] is not None
    both = "SELECT TIMESTAMPTZ '2020-01-01 00:00:00+00' AS t, 'b' AS y, TIMESTAMPTZ '2021-01-01 00:00:00+00' AS t"
    years = [v.year for v in queries.execute(Store(root), both, as_rows=True).rows[0][::2]]
    assert years == [2020, 2021]


def test_machine_ceilings_reads_the_ceilings_of_the_machines_runs_only(
    many_runs, pointed, monkeypatch
) -> None:
    """`rl ceilings RUN` (views.ceilings.machine_ceilings): step machine_runs reads every run's runs row (whose labels
    name the machine's runs), then machine_ceilings binds the ceilings files of those runs only (it bound every
    run's before), and the answer is the one read whole."""
    root, runs = many_runs
    monkeypatch.setattr(database, "PRUNE_FROM", 10**9)
    gpus = {
        r["run_id"]: r["gpu_name"] for r in Store(root).query("SELECT run_id, gpu_name FROM runs").to_pylist()
    }
    whole = {r: machine_ceilings(Store(root), r).rows for r in runs[:3]}
    monkeypatch.setattr(database, "PRUNE_FROM", 0)
    have = {r for r in runs if (root / "ceilings" / f"run_id={r}").exists()}  # an RTX 3070 report has none
    checked = 0
    for run in runs[:3]:
        pointed.clear()
        assert canonical(machine_ceilings(Store(root), run).rows) == canonical(whole[run])
        read = {f.split("run_id=")[1].split("/")[0] for f in pointed if "/ceilings/" in f}
        assert read == {r for r in have if gpus[r] == gpus[run]}, run
        checked += bool(read) and read != have
    assert checked == 2
