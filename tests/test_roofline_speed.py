"""``rl roofline RUN -o x.png`` within reach of a plain Altair + vl-convert script (issue 14): pyarrow imports pandas
(0.25-0.4 s of CPU) whenever it converts Python values (a TIMESTAMPTZ to Python, a scalar for pyarrow.compute, a
table DuckDB registers), so the command's path converts none, and what it reads is what pyarrow gave before."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rooflake.queries import connect, fetch
from rooflake.store import Store
from rooflake.views.ceilings import run_roofs
from rooflake.views.runs import run_info

from _support import fixture

RL = "import sys; from rooflake.cli import main; sys.argv[0] = 'rl'; main()"


@pytest.fixture(scope="module")
def one_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """(store, run id): a store holding one real Nsight Compute run (its own report peaks)."""
    root = tmp_path_factory.mktemp("roofline-speed") / "store"
    args = ["ingest", str(fixture("AveryClapp__ESMM-Research__profile_output")), "--store", str(root)]
    p = subprocess.run([sys.executable, "-c", RL, *args], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    (run_id,) = Store(root).run_ids()
    return str(root), run_id


def _imported(args: list[str]) -> set[str]:
    p = subprocess.run([sys.executable, "-X", "importtime", "-c", RL, *args], capture_output=True, text=True,
                       timeout=300)  # fmt: skip
    assert p.returncode == 0, p.stderr[-2000:]
    return {
        line.rsplit("|", 1)[1].strip().split(".")[0]
        for line in p.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


@pytest.mark.parametrize("out,level", [("x.png", "dram"), ("x.svg", "all"), ("x.html", "l2")])
def test_rl_roofline_imports_no_pandas(one_run: tuple[str, str], tmp_path, out: str, level: str) -> None:
    store, run_id = one_run
    mods = _imported(["roofline", run_id, "--store", store, "--level", level, "-o", str(tmp_path / out)])
    assert "vl_convert" in mods or out.endswith(".html")  # the measurement saw the imports
    assert (tmp_path / out).stat().st_size > 1000
    assert "pandas" not in mods


def test_run_info_is_what_pyarrow_gave(one_run: tuple[str, str]) -> None:
    """The runs row read from DuckDB's values equals pyarrow's ``to_pylist()``: labels as (key, value) pairs,
    ingested_at aware in the connection's zone, every column in order."""
    store, run_id = one_run
    con = connect(Store(store))
    mine = run_info(con, run_id)
    arrow = fetch(con, "run_info", {"run_id": run_id}).to_pylist()[0]
    assert mine == arrow and list(mine) == list(arrow)
    assert repr(mine["ingested_at"]) == repr(arrow["ingested_at"])
    assert mine["gpu_name"] and isinstance(mine["labels"], list)


def test_own_report_roofs_as_before(one_run: tuple[str, str]) -> None:
    """The run's own ncu peaks are the default roofs (rows from source_run_ceilings, given the run's
    run_ceilings rows as an Arrow relation)."""
    store, run_id = one_run
    roofs = run_roofs(Store(store), run_id)
    assert roofs.source == "ncu-report" and roofs.tables is None
    rows = roofs.rows.to_pylist()
    assert {r["ceiling"] for r in rows} >= {"DRAM", "FP32"}
    assert all(r["run_id"] == run_id and r["overlay"] is False for r in rows)
    assert all(r["source_label"].startswith(f"{r['source']}, ") for r in rows if r["clock_hz"])
