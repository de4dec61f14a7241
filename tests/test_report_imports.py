"""``rl report`` converts no Python value to Arrow (issue 14): pyarrow imports pandas for every such conversion
(``pc.equal(column, "x")``, ``to_pylist`` of a TIMESTAMPTZ), ~0.1 s of CPU of a report. Rows are split by the
column's own Arrow scalar (``views.runs.rows_where``) and the runs rows read as DuckDB rows (``row_dicts``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pyarrow.compute as pc
from polars.testing import assert_frame_equal

from rooflake.queries import connect, fetch
from rooflake.store import Store
from rooflake.views.runs import row_dicts, rows_where


def test_rows_where_equals_arrow_filter_on_every_run(fixture_store: Path) -> None:
    """Every run's and every grain's rows of the fixture store, in their order, as ``pc.equal`` gives them (NaN equal to NaN); a value
    no row holds gives no rows and the same columns."""
    con = connect(Store(fixture_store))
    kr = fetch(con, "kernel_roofline")
    runs = sorted(set(kr["run_id"].to_pylist()))
    assert len(runs) > 3
    for rid in runs:
        got = rows_where(kr, "run_id", rid)
        assert got.num_rows > 0
        assert_frame_equal(pl.from_arrow(got), pl.from_arrow(kr.filter(pc.equal(kr["run_id"], rid))))  # type: ignore[arg-type]
    none = rows_where(kr, "run_id", "no-such-run")
    assert none.num_rows == 0 and none.schema == kr.schema


def test_row_dicts_are_to_pylist(fixture_store: Path) -> None:
    """The runs rows (a TIMESTAMPTZ ``ingested_at``, a MAP of labels) as dicts equal to pyarrow's ``to_pylist``."""
    con = connect(Store(fixture_store))
    ids = fetch(con, "run_list")["run_id"].to_pylist()
    arrow = fetch(con, "report_run_info", {"run_ids": ids})
    assert row_dicts(fetch(con, "report_run_info", {"run_ids": ids}, as_pylist=True)) == arrow.to_pylist()


def test_report_imports_no_pandas(fixture_store: Path, tmp_path: Path) -> None:
    """``rl report`` in a fresh process writes its report and leaves pandas unimported in the main process (where
    pandas is installed; CI's venv has none)."""
    probe = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('LOADED', 'pandas' in sys.modules))\n"
        "from rooflake.cli import main\n"
        "sys.argv[0] = 'rl'\n"
        "main()\n"
    )
    out = tmp_path / "report"
    args = ["report", "--store", str(fixture_store), "--out", str(out)]
    p = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    assert p.stdout.rsplit("LOADED", 1)[1].strip() == "False"
    assert (out / "index.html").read_text(encoding="utf-8").startswith("<!")
    assert json.dumps(sorted(f.suffix for f in (out / "charts").iterdir())).count(".png") > 0
