"""Contract tests of the three places rooflake's speed rests on another library's internals. Each holds the installed
library to exactly what rooflake's code relies on, so that an upgrade which changes it fails here, by name, instead
of quietly making ``rl`` slower (each seam falls back to the library's own, slower path):

- typer's coercion (:mod:`rooflake.cli.coercion`: :data:`~rooflake.cli.coercion.TYPER_INTERNALS`);
- DuckDB's plans over empty stand-ins (:mod:`rooflake.store.database`, "The seam": ``EXPLAIN (FORMAT JSON)``'s
  keys, its filter texts, the binder's table names);
- DuckDB started on a second thread (:mod:`rooflake.store.early`: a connection crosses threads, the GIL is
  released while DuckDB works).
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import threading
import time
from typing import Any

import pytest

from rooflake.cli import coercion
from rooflake.schema.duck import sql_file, sql_template
from rooflake.store import database, early
from rooflake.store.layout import ALL_TABLES

# --- typer: rooflake.cli.coercion ---------------------------------------------------------------------------------


def _parameters(fn: Any) -> list[str]:
    return list(inspect.signature(fn).parameters)


def test_typer_has_every_internal_the_coercion_takes() -> None:
    found = coercion.internals()
    assert found is not None, f"typer lacks one of the modules {list(coercion.TYPER_INTERNALS)}"
    missing = [name for name, value in found.items() if value is None]
    assert not missing, f"typer no longer has {missing}: rl's lazy coercion is off (~0.06-0.1 s per command)"


def test_typer_runtime_param_has_the_shape_the_coercion_extends() -> None:
    """``Lazy`` subclasses ``RuntimeParam`` (a frozen dataclass of ``parameter_info`` and ``annotation``) and
    overrides ``_coerce_value(value, param, ctx)``; ``build_runtime_param(descriptor)`` builds typer's own."""
    found = coercion.internals()
    assert found is not None
    base = found["RuntimeParam"]
    assert dataclasses.is_dataclass(base) and base.__dataclass_params__.frozen  # type: ignore[attr-defined]
    assert {"parameter_info", "annotation"} <= {f.name for f in dataclasses.fields(base)}
    assert _parameters(base._coerce_value) == ["self", "value", "param", "ctx"]
    assert _parameters(found["build_runtime_param"]) == ["descriptor"]
    assert callable(found["_TyperParameter"].get_runtime_param)


def test_typer_path_and_choice_helpers_take_the_arguments_given() -> None:
    found = coercion.internals()
    assert found is not None
    assert _parameters(found["coerce_cli_path"])[:2] == ["value", "parameter_info"]
    assert {"path_type", "param", "ctx"} <= set(_parameters(found["coerce_cli_path"]))
    assert _parameters(found["coerce_cli_choice"])[0] == "value"
    assert {"choices", "case_sensitive", "ctx"} <= set(_parameters(found["coerce_cli_choice"]))
    assert _parameters(found["choice_coercion_annotation"]) == ["annotation", "parameter_info"]


def test_typer_parameters_carry_what_the_lazy_coercion_reads() -> None:
    """A built parameter of ``rl`` has ``_runtime_param`` and a ``type_descriptor`` with ``parameter_info``,
    ``annotation`` and ``file_annotation``, and the patch is in force on typer's parameter class."""
    import typer

    from rooflake.cli import app

    found = coercion.internals()
    assert found is not None
    command = typer.main.get_command(app)
    params = [p for c in command.commands.values() for p in c.params]  # type: ignore[attr-defined]
    assert params and all(isinstance(p, found["_TyperParameter"]) for p in params)
    for p in params[:20]:
        assert hasattr(p, "_runtime_param")
        d = p.type_descriptor
        assert hasattr(d, "parameter_info") and hasattr(d, "annotation") and hasattr(d, "file_annotation")
    assert getattr(found["_TyperParameter"], "_rooflake_lazy", False)


# --- DuckDB plans: rooflake.store.database ------------------------------------------------------------------------


@pytest.fixture
def planning() -> Any:
    """A connection as a pruning database plans on: the stand-ins, ``plan_settings.sql``, and a temporary view per
    store table over its stand-in (``plan_view.sql``)."""
    con = database.stand_ins()
    con.execute(sql_file(database.PKG, "plan_settings.sql"))
    for t in ALL_TABLES:
        con.execute(sql_template(database.PKG, "plan_view.sql", table=t))
    yield con
    con.close()


def _plan(con: Any, sql: str) -> Any:
    rows = con.execute(sql_template(database.PKG, "explain_plan.sql", query=sql)).fetchall()
    return json.loads(rows[0][1])


def _scans(plan: Any) -> list[dict[str, Any]]:
    out, stack = [], [*plan] if isinstance(plan, list) else [plan]
    while stack:
        node = stack.pop()
        info = node.get(database.PLAN_INFO)
        if isinstance(info, dict) and str(info.get(database.PLAN_TABLE, "")).endswith("__empty_kernels"):
            out.append(info)
        stack.extend(node.get(database.PLAN_CHILDREN) or [])
    return out


def test_explain_json_has_the_keys_scan_runs_reads(planning: Any) -> None:
    scans = _scans(_plan(planning, "SELECT * FROM kernels WHERE run_id = 'a'"))
    assert len(scans) == 1, (
        "no scan of __empty_kernels under extra_info.Table/children in EXPLAIN (FORMAT JSON)"
    )
    assert database.PLAN_FILTERS in scans[0], (
        f"the scan's extra_info has no {database.PLAN_FILTERS!r}: {scans[0]}"
    )
    assert "run_id" in str(scans[0][database.PLAN_FILTERS])


@pytest.mark.parametrize(
    ("sql", "runs"),
    [
        ("SELECT * FROM kernels WHERE run_id = 'a'", {"kernels": {"a"}}),
        ("SELECT * FROM kernels WHERE run_id IN ('a', 'it''s')", {"kernels": {"a", "it's"}}),
        (
            "SELECT * FROM kernels k JOIN runs r ON k.run_id = r.run_id WHERE r.run_id = 'a'",
            {"kernels": {"a"}, "runs": {"a"}},
        ),
        ("SELECT count(*) FROM kernels", {"kernels": None}),
    ],
)
def test_pushed_down_run_filters_read_as_scan_runs_reads_them(planning: Any, sql: str, runs: dict) -> None:
    """DuckDB still writes a pushed-down run filter (through a join too) in a form :func:`scan_runs` parses."""
    scanned = database.scan_runs(_plan(planning, sql))
    assert scanned is not None
    assert {t: v for t, v in scanned.items() if v != frozenset()} == {
        t: (frozenset(v) if v is not None else None) for t, v in runs.items()
    }


def test_the_binder_names_the_stand_ins_a_view_reads(planning: Any) -> None:
    planning.execute("CREATE TEMP VIEW v AS SELECT k.* FROM kernels k JOIN runs r ON k.run_id = r.run_id")
    assert database.bound_tables(planning, "SELECT * FROM v WHERE run_id = $r") == {
        "__empty_kernels",
        "__empty_runs",
    }


def test_the_planner_probe_passes_on_this_duckdb() -> None:
    """The check :func:`database.build` makes once per database: where it fails, pruning is silently off."""
    con = database.stand_ins()
    con.execute(sql_file(database.PKG, "plan_settings.sql"))
    db = database.Database(con, None, True)  # type: ignore[arg-type]  # planning reads no sources
    assert database._check_planner(db), "DuckDB's plans no longer show the run filters: every file is read"
    assert db.binds, "DuckDB's get_table_names no longer expands views: statements are planned the old way"


# --- DuckDB started early: rooflake.store.early -------------------------------------------------------------------


def _catalogue(con: Any) -> list[tuple[str, str, str]]:
    return con.execute(
        "SELECT table_name, column_name, data_type FROM information_schema.columns ORDER BY ALL"
    ).fetchall()


def test_the_early_thread_yields_the_connection_stand_ins_makes() -> None:
    early.start()
    con = early.connect()  # made on rooflake-duckdb-start, used here
    assert _catalogue(con) == _catalogue(database.stand_ins())
    assert con.execute("SELECT count(*) FROM __empty_runs").fetchone() == (0,)


def test_duckdb_releases_the_gil_while_it_works() -> None:
    """What makes the early start pay: Python runs on the main thread while DuckDB executes on another."""
    import duckdb

    con = duckdb.connect()
    con.execute("SET threads = 1")
    span: list[float] = []

    def work() -> None:
        span.append(time.perf_counter())
        con.execute("SELECT count(*) FROM range(100000000) WHERE range % 7 = 3").fetchall()
        span.append(time.perf_counter())

    thread = threading.Thread(target=work)
    ticks: list[float] = []
    thread.start()
    while thread.is_alive():
        ticks.append(time.perf_counter())
    thread.join()
    during = [t for t in ticks if span[0] < t < span[1]]
    assert len(during) > 100, (
        f"the main thread ran {len(during)} times in {span[1] - span[0]:.2f} s of DuckDB"
    )
