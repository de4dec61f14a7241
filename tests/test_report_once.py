"""`rl report` computes each run's launch overhead and time-based roofline once (issue: they were computed twice
when a run's previous run lay outside the report's selection: once over the report's own runs, then again over
those and their previous runs, the first result thrown away). Real reports: the A10G SGEMMs (AveryClapp/ESMM) then
the H100 PCIe silu kernels (AlpriElse/cs599k) with one label, so `--runs H100` is compared with the A10G run it does
not select; the numbers are those of the views over both runs, as before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rooflake import queries
from rooflake.cli import app
from rooflake.pipeline import ingest_paths
from rooflake.store import Store
from rooflake.views import report as report_view
from rooflake.views.time_roofline import launch_overheads, time_rooflines

from _support import fixture, same_table

A10G = fixture("AveryClapp__ESMM-Research__profile_output")
H100 = fixture("AlpriElse__cs599k")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("report_once") / "store"
    for report in (A10G, H100):  # one at a time: the H100 run is the later one
        assert [r.status for r in ingest_paths([report], root, {"batch": "1"}, workers=1)] == ["ingested"]
    return root


def _run(store: Path, report: Path) -> str:
    con = queries.connect(Store(store))
    return con.execute("SELECT run_id FROM runs WHERE source_path = ?", [str(report.resolve())]).fetchone()[0]


@pytest.fixture()
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[list[str]]]:
    """The runs each call of launch_overheads and time_rooflines the report view makes was asked for."""
    calls: dict[str, list[list[str]]] = {"launch_overheads": [], "time_rooflines": []}

    def overheads(store: Any, run_ids: list[str]) -> Any:
        calls["launch_overheads"].append(list(run_ids))
        return launch_overheads(store, run_ids)

    def times(store: Any, overheads_: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        calls["time_rooflines"].append(list(overheads_))
        return time_rooflines(store, overheads_, *args, **kwargs)

    monkeypatch.setattr(report_view, "launch_overheads", overheads)
    monkeypatch.setattr(report_view, "time_rooflines", times)
    return calls


def test_previous_run_outside_the_selection_computes_once(store: Path, counted: dict) -> None:
    h100, a10g = _run(store, H100), _run(store, A10G)
    ids, runs = report_view.report_runs(Store(store), run_ids=[h100])
    (r,) = list(runs)
    assert ids == [h100] and r.previous == a10g and r.comparison is not None
    assert counted == {"launch_overheads": [[h100]], "time_rooflines": [[h100]]}
    # the numbers: those of the views over every run read (the report's and its previous run), as before
    both = Store(store, only_runs=[a10g, h100])
    runs_rows = {h100: report_view._tables(both, [h100])["runs"][h100]}
    want = time_rooflines(both, launch_overheads(both, [h100]), runs_rows)[h100]
    assert r.time is not None and not isinstance(want, Exception)
    assert r.time.launch_overhead == want.launch_overhead
    same_table(r.time.rows, want.rows)
    same_table(r.time.ceilings, want.ceilings)


@pytest.mark.parametrize("given", [False, True])
def test_previous_run_inside_the_selection_computes_once(store: Path, counted: dict, given: bool) -> None:
    h100, a10g = _run(store, H100), _run(store, A10G)
    ids, runs = report_view.report_runs(Store(store), run_ids=[a10g, h100] if given else None)
    assert [r.previous for r in runs] == [None, a10g]
    assert counted == {"launch_overheads": [ids], "time_rooflines": [ids]}


def test_the_page_is_the_same_with_or_without_the_previous_run_selected(store: Path, tmp_path: Path) -> None:
    """The H100 run's section (charts and tables) reads the same whether its previous run is selected or not."""
    h100 = _run(store, H100)
    base = ["report", "--store", str(store)]
    alone, both = tmp_path / "alone", tmp_path / "both"
    assert CliRunner().invoke(app, [*base, "--runs", h100[:8], "--out", str(alone)]).exit_code == 0
    assert CliRunner().invoke(app, [*base, "--out", str(both)]).exit_code == 0
    one = (alone / "index.html").read_text().split("<section>")[1].split("</section>")[0]
    two = (both / "index.html").read_text().split("<section>")[2].split("</section>")[0]
    assert one.replace("chart-0-", "chart-X-") == two.replace("chart-1-", "chart-X-")
    assert "compared with the previous run of the same labels" in one
    for name in ("00-hierarchical_roofline.png", "01-time_based_roofline.png"):
        assert (alone / "charts" / f"00-{name}").read_bytes() == (both / "charts" / f"01-{name}").read_bytes()


@pytest.fixture()
def builds(monkeypatch: pytest.MonkeyPatch) -> list[list[str] | None]:
    """The runs of each DuckDB database built from now on (None: every run)."""
    from rooflake.store import database

    made: list[list[str] | None] = []
    build = database.build

    def counting(root: Any, only_runs: list[str] | None = None, *args: Any, **kwargs: Any) -> Any:
        made.append(only_runs)
        return build(root, only_runs, *args, **kwargs)

    monkeypatch.setattr(database, "build", counting)
    return made


def test_a_report_builds_no_database_twice_for_the_same_runs(store: Path, builds: list) -> None:
    """Each set of runs a report reads gets one database: the whole store's when the report reads every run of
    it, the given runs' when they are all kept (each was built a second time before)."""
    h100, a10g = _run(store, H100), _run(store, A10G)
    for run_ids in (None, [a10g, h100], [h100]):
        builds.clear()
        ids, runs = report_view.report_runs(Store(store), run_ids=run_ids)
        list(runs)
        # every run: the store's (selection, previous runs); given: theirs, then the store's (previous runs; the
        # H100 run alone reads its previous run too, so every run of the store)
        want = [None] if run_ids is None else [sorted(run_ids), None]
        assert sorted(builds, key=str) == sorted(want, key=str), run_ids
    assert ids == [h100]
