"""``rl roofline RUN`` on a run's own report peaks reads its rows without pyarrow (issue 14: the PNG chart's
imports): ``roofline(..., as_rows=True)`` gives :class:`rooflake.schema.duck.Rows` of the same columns and values as
the Arrow path, and the chart built from them is the same Vega-Lite spec, on every fixture run, level and precision."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
from polars.testing import assert_frame_equal

from rooflake.render import roofline_chart, spec_dict, zero_flop_table
from rooflake.render.inputs import frame
from rooflake.schema import RooflineDataError
from rooflake.schema.duck import Rows
from rooflake.store import Store
from rooflake.views.roofline import roofline

#: (level, precision) pairs drawn from both paths: every level with each kernel's dominant precision, and every
#: precision at DRAM
CASES = [(lv, "all") for lv in ("dram", "l2", "l1", "all")] + [
    ("dram", p) for p in ("fp64", "fp32", "fp16", "tensor")
]


def _runs(store: Path) -> list[str]:
    return sorted(p.name.split("=", 1)[1] for p in (store / "runs").iterdir() if p.name.startswith("run_id="))


def _spec(view: Any, level: str, precision: str) -> dict[str, Any] | str:
    """The chart's spec of ``view``, or the error text when nothing can be drawn."""
    from rooflake.cli.roofline_cmds import (
        roofline_title,
    )  # here: importing it registers the command (test_cli)

    title = roofline_title(view.run, view.run_id, view.grain, view.depth)
    try:
        return spec_dict(
            roofline_chart(view.points, view.ceilings, level=level, precision=precision, title=title)
        )
    except RooflineDataError as e:
        return f"RooflineDataError: {e}"


def _view(store: Store, run: str, level: str, as_rows: bool, ceilings: str = "default") -> Any:
    try:
        return roofline(store, run, level, ceilings=ceilings, as_rows=as_rows)
    except RooflineDataError as e:
        return f"RooflineDataError: {e}"


def test_rows_equal_arrow_and_charts_equal(fixture_store: Path) -> None:
    """For every fixture run and level: as_rows gives Rows exactly when the run has report peaks (else the Arrow
    tables), the same frames (points, ceilings, zero-FLOP kernels) and the same spec for every CASE."""
    store = Store(fixture_store)
    on_rows = 0
    for run in _runs(fixture_store):
        for level in ("dram", "l2", "l1", "all"):
            table, rows = _view(store, run, level, False), _view(store, run, level, True)
            if isinstance(table, str) or isinstance(rows, str):
                assert rows == table, (run, level)
                continue
            if not isinstance(rows.points, Rows):
                assert rows.points.equals(table.points) and rows.ceilings.equals(table.ceilings), (run, level)
                continue
            on_rows += 1
            assert isinstance(rows.ceilings, Rows)
            assert (rows.run, rows.run_id, rows.grain, rows.depth) == (table.run, table.run_id, "kernel", 1)
            assert_frame_equal(frame(rows.points, "p"), frame(table.points, "p"))
            assert_frame_equal(frame(rows.ceilings, "c"), frame(table.ceilings, "c"))
            assert_frame_equal(zero_flop_table(rows.points), zero_flop_table(table.points))
            for lv, precision in CASES if level == "dram" else [(level, "all")]:
                assert _spec(rows, lv, precision) == _spec(table, lv, precision), (run, lv, precision)
    assert on_rows >= 8, on_rows  # most fixture reports hold their peaks: the rows path is the common one


def test_report_ceilings_on_rows(fixture_store: Path) -> None:
    """``--ceilings report`` takes the rows path too, with the rows of the Arrow path; a run without report peaks
    raises the same error on both."""
    store = Store(fixture_store)
    for run in _runs(fixture_store):
        table, rows = _view(store, run, "dram", False, "report"), _view(store, run, "dram", True, "report")
        if isinstance(table, str) or isinstance(rows, str):
            assert rows == table, run
            continue
        assert_frame_equal(frame(rows.ceilings, "c"), frame(table.ceilings, "c"))
        assert_frame_equal(frame(rows.points, "p"), frame(table.points, "p"))


def test_rows_frame_keeps_types_nan_and_lists() -> None:
    """A Rows' frame has the polars types of DuckDB's Arrow columns, NaN kept (conform turns it into null)."""
    import duckdb

    from rooflake.schema.duck import fetch_pylist

    con = duckdb.connect()
    sql = "SELECT * FROM (VALUES ('a', 1::BIGINT, 'NaN'::DOUBLE, true, ['x', 'y']), (NULL, NULL, 2.5, NULL, NULL))"
    rows = fetch_pylist(con, sql)
    assert isinstance(rows, Rows)
    got = frame(rows, "t")
    assert_frame_equal(got, pl.from_arrow(con.sql(sql).arrow().read_all()))  # type: ignore[arg-type]
    assert got.dtypes == [pl.String, pl.Int64, pl.Float64, pl.Boolean, pl.List(pl.String)]


def test_png_command_imports_no_pyarrow(fixture_store: Path, tmp_path: Path) -> None:
    """``rl roofline RUN -o x.png`` on a run with report peaks and no zero-FLOP kernel, in a fresh process, imports
    neither pyarrow, pandas, polars nor Altair (issue 14: ~0.15, 0.1 and 0.2 s of CPU of a 1.4 s command), and
    writes the chart."""
    store = Store(fixture_store)
    views = [v for r in _runs(fixture_store) if not isinstance(v := _view(store, r, "dram", True), str)]
    run = next(
        v.run_id for v in views if isinstance(v.points, Rows) and isinstance(_spec(v, "dram", "all"), dict)
    )
    probe = (
        "import atexit, json, sys\n"
        "atexit.register(lambda: print('LOADED', json.dumps(sorted(m for m in ('pyarrow', 'pandas', 'polars', 'altair') "
        "if m in sys.modules))))\n"
        "from rooflake.cli import main\n"
        "sys.argv[0] = 'rl'\n"
        "main()\n"
    )
    out = tmp_path / "x.png"
    args = ["roofline", run, "--store", str(fixture_store), "-o", str(out)]
    p = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    loaded = json.loads(p.stdout.rsplit("LOADED", 1)[1])
    assert loaded == [], loaded
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_png_command_names_report_roofs(fixture_store: Path, tmp_path: Path) -> None:
    """``rl roofline RUN --ceilings report -o x.png`` on a run with report peaks (the rows path) names its roofs in
    its summary line, exit 0 (it raised AttributeError: the rows have no ``to_pylist``; found in review)."""
    from typer.testing import CliRunner

    from rooflake.cli import app

    store = Store(fixture_store)
    views = [v for r in _runs(fixture_store) if not isinstance(v := _view(store, r, "dram", True), str)]
    run = next(
        v.run_id for v in views if isinstance(v.ceilings, Rows) and isinstance(_spec(v, "dram", "all"), dict)
    )
    for fmt in ("png", "svg", "html"):
        out = tmp_path / f"x.{fmt}"
        args = ["roofline", run, "--store", str(fixture_store), "-o", str(out), "--ceilings", "report"]
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 0, res.output
        assert ", roofs: ncu-report" in res.output and out.stat().st_size > 0
