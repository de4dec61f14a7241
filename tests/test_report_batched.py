"""rl report's queries run once for all its runs (issue 14): every run's time-based roofline, top layers and kernels,
runs row, kernel_roofline, run_ceilings and physics warnings from the batched statements equal what the one-run
views and queries give, on real fixture runs (ncu reports with their own peaks and with datasheet roofs, an nsys
trace without counters, a run compared with its previous run)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from rooflake.pipeline import ingest_paths
from rooflake.queries import connect, execute, fetch
from rooflake.schema import RooflakeError
from rooflake.store import Store
from rooflake.views.report import run_reports
from rooflake.views.runs import run_info
from rooflake.views.time_roofline import launch_overheads, time_roofline, time_rooflines

from _support import FIXTURES, fixture, same_table

NSYS_MOCK = FIXTURES / "nsys" / "GindaChen__nsys-ai__tests__fixtures__mock.sqlite"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    root = tmp_path_factory.mktemp("batched") / "store"
    reports = [
        "AveryClapp__ESMM-Research__profile.ncu-rep",  # no roofline sections: datasheet roofs
        "AveryClapp__ESMM-Research__profile_output",  # the report's own peaks
        "AlpriElse",
        "eschnett",
        "ZSL98",  # datasheet roofs, 11 kernels
    ]
    for name in reports:
        list(ingest_paths([fixture(name)], root, labels={"batch": "1"}))
    list(ingest_paths([NSYS_MOCK], root, labels={"batch": "2"}))
    return Store(root)


def _ids(store: Store) -> list[str]:
    """The run ids, the nsys run last."""
    runs = fetch(connect(store), "run_list").to_pylist()
    return [r["run_id"] for r in sorted(runs, key=lambda r: str(r["source"]).endswith(".sqlite"))]


@pytest.mark.parametrize("given", [False, True])
@pytest.mark.parametrize("ceilings", ["default", "datasheet"])
def test_time_rooflines_equal_one_run_at_a_time(store: Store, ceilings: str, given: bool) -> None:
    """Also with the runs' run_ceilings rows read at once and given (as rl report does)."""
    ids = _ids(store)
    overheads = launch_overheads(store, ids)
    runs = {rid: run_info(connect(store), rid) for rid in ids}
    own = fetch(connect(store), "run_ceilings", filters={"run_id": ids}) if given else None
    batched = time_rooflines(store, overheads, runs, ceilings=ceilings, run_ceilings=own)
    assert list(batched) == ids
    drawn: dict[str, str] = {}
    for rid in ids:
        got = batched[rid]
        try:
            want = time_roofline(store, rid, launch_overhead_ns=overheads[rid], ceilings=ceilings)
        except RooflakeError as e:  # the same error, word for word
            assert isinstance(got, type(e)) and str(got) == str(e)
            continue
        assert not isinstance(got, RooflakeError), got
        assert (got.run_id, got.grain, got.depth, got.level) == (rid, "kernel", 1, "dram")
        assert got.launch_overhead == want.launch_overhead
        same_table(got.rows, want.rows)
        same_table(got.points, want.points)
        same_table(got.ceilings, want.ceilings)
        drawn[rid] = str(got.ceilings["source"][0])
    # real coverage: runs drawn against their own peaks or the datasheet's (each run's kernel_roofs given to the
    # one statement), runs with nothing to draw, an nsys run without counters
    assert len(drawn) == 3 and set(drawn.values()) == {"ncu-report" if ceilings == "default" else "datasheet"}
    assert isinstance(batched[ids[-1]], RooflakeError)


def _same_rooflines(got: dict[str, Any], want: dict[str, Any]) -> None:
    for rid, w in want.items():
        g = got[rid]
        if isinstance(w, RooflakeError):
            assert isinstance(g, type(w)) and str(g) == str(w)
            continue
        assert not isinstance(g, RooflakeError), g
        same_table(g.rows, w.rows)
        same_table(g.points, w.points)


def _doubled_peaks(points: pa.Table) -> pa.Table:
    """``points`` with every compute peak doubled: rows no view gives, to see who reads them."""
    import pyarrow.compute as pc

    i = points.schema.get_field_index("peak_flops_per_s")
    return points.set_column(i, "peak_flops_per_s", pc.multiply(points["peak_flops_per_s"], 2.0))


def test_time_rooflines_read_the_points_given(store: Store) -> None:
    """rl report gives time_rooflines the kernel_roofline rows it has read (``points``): the rooflines are those
    without them. The rows' statement reads them only when no run is drawn against another source's ceilings:
    with their peaks doubled, each compute bound line of the runs on their own peaks moves; with one run drawn
    against the datasheet (its roofs given, as rl report --ceilings gives them), none does."""
    from rooflake.views.ceilings import run_roofs

    ids = _ids(store)
    overheads = launch_overheads(store, ids)
    runs = {rid: run_info(connect(store), rid) for rid in ids}
    points = fetch(connect(store), "kernel_roofline", filters={"run_id": ids})
    for ceilings in ("default", "datasheet"):
        want = time_rooflines(store, overheads, runs, ceilings=ceilings)
        _same_rooflines(time_rooflines(store, overheads, runs, ceilings=ceilings, points=points), want)
    plain = time_rooflines(store, overheads, runs)
    drawn = [r for r, t in plain.items() if not isinstance(t, RooflakeError)]
    assert len(drawn) == 3
    changed = time_rooflines(store, overheads, runs, points=_doubled_peaks(points))
    for rid in drawn:
        assert changed[rid].rows["compute_time_ns"] != plain[rid].rows["compute_time_ns"]  # type: ignore[union-attr]
    mixed = {drawn[0]: run_roofs(store, drawn[0], "datasheet", info=runs[drawn[0]])}
    want = time_rooflines(store, overheads, runs, roofs=mixed)  # type: ignore[arg-type]
    sources = [want[r].ceilings["source"][0].as_py() for r in drawn[:2]]  # type: ignore[union-attr]
    assert sources == ["datasheet", "ncu-report"]
    doctored = time_rooflines(store, overheads, runs, roofs=mixed, points=_doubled_peaks(points))  # type: ignore[arg-type]
    _same_rooflines(doctored, want)


def _one_run(store: Store, sql: str, rid: str) -> pa.Table:
    return execute(store, sql, {"run_id": rid})


TOP_KERNELS = """
SELECT name, count(*) AS launches,
    sum(duration_ns) FILTER (WHERE NOT isnan(duration_ns)) AS kernel_time_ns,
    sum(duration_ns) FILTER (WHERE NOT isnan(duration_ns))
        / fsum(sum(duration_ns) FILTER (WHERE NOT isnan(duration_ns))) OVER () AS share_of_kernel_time
FROM kernels WHERE run_id = $run_id GROUP BY name ORDER BY kernel_time_ns DESC NULLS LAST, name LIMIT 10
"""
TOP_LAYERS = """
SELECT layer, launches, gpu_time_ns, share_of_gpu_time, flops_per_s FROM layer_summary
WHERE run_id = $run_id AND depth = 1 ORDER BY gpu_time_ns DESC, device_id, layer LIMIT 10
"""


def test_top_kernels_share_is_exact(tmp_path: Path, store: Store) -> None:
    """Each kernel's share of its run's kernel time is its time over the correctly rounded sum of every kernel's
    (math.fsum), not a sum whose last bit depends on the order rows come in (a review found one ulp off on the
    A100 CSV export: 0.8720946336141571 for 0.872094633614157)."""
    list(ingest_paths([FIXTURES / "csv" / "wangzy0327__cuda-roofline__src__output_A100.csv"], tmp_path / "s"))
    for s in (store, Store(tmp_path / "s")):
        _exact_shares(s)


def _exact_shares(store: Store) -> None:
    ids = [r["run_id"] for r in fetch(connect(store), "run_list").to_pylist()]
    top = fetch(connect(store), "top_kernels", {"run_ids": ids, "top": 100_000}).to_pylist()
    checked = 0
    for rid in ids:
        rows = [r for r in top if r["run_id"] == rid and r["kernel_time_ns"] is not None]
        total = math.fsum(r["kernel_time_ns"] for r in rows)
        for r in rows:
            assert r["share_of_kernel_time"] == r["kernel_time_ns"] / total, (rid, r["name"])
            checked += 1
    assert checked > 2


def test_run_reports_equal_one_run_queries(store: Store) -> None:
    ids = _ids(store)
    previous = {ids[1]: ids[0]}
    reports = {r.run_id: r for r in run_reports(store, ids, previous)}
    assert list(reports) == ids
    con = connect(store)
    for rid, r in reports.items():
        assert r.run == run_info(con, rid)
        for got, name in ((r.points, "kernel_roofline"), (r.ceilings, "run_ceilings")):
            same_table(got, fetch(con, name, filters={"run_id": rid}))
        checks = fetch(con, "physics_checks", filters={"run_id": rid})
        same_table(r.checks, checks.select(["kernel_id", "name", "check", "detail"]))
        same_table(r.top_kernels, _one_run(store, TOP_KERNELS, rid))
        same_table(r.top_layers, _one_run(store, TOP_LAYERS, rid))
        assert r.top_kernels.num_rows > 0
    cmp = reports[ids[1]].comparison
    assert cmp is not None and (cmp.base_run, cmp.new_run) == (ids[0], ids[1])
    assert reports[ids[0]].comparison is None and reports[ids[0]].comparison_note is None
    assert reports[ids[-1]].time is None and (reports[ids[-1]].time_note or "").startswith("no time-based")


def test_time_roofline_rows_of_a_report(tmp_path: Path, store: Store) -> None:
    """Through the CLI's path (report_runs over a store of only the report's runs): the rows each section draws."""
    from rooflake.views.report import report_runs

    ids, runs = report_runs(store)
    got: dict[str, Any] = {r.run_id: r.time for r in runs}
    assert list(got) == ids
    for rid, t in got.items():
        if t is not None:
            want = time_roofline(store, rid)
            same_table(t.rows, want.rows)
            assert t.launch_overhead == want.launch_overhead


def test_what_runs_without_points_lack_is_one_statement(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each run without a roofline point says what it lacks, as rl roofline says it for that run alone, from one
    missing_counters statement for all of them (one per run took ~20 ms each)."""
    from rooflake.views import report as report_view
    from rooflake.views.roofline import missing_counters, no_counters

    asked: list[list[str]] = []

    def counted(con: Any, run_ids: list[str], level: str) -> Any:
        asked.append(list(run_ids))
        return missing_counters(con, run_ids, level)

    monkeypatch.setattr(report_view, "missing_counters", counted)
    reports = list(run_reports(store, _ids(store)))
    bare = [r for r in reports if r.points.num_rows == 0]
    assert len(bare) >= 2 and len(asked) == 1 and sorted(asked[0]) == sorted(r.run_id for r in bare)
    con = connect(store)
    for r in bare:
        assert r.roofline_note == str(no_counters(con, r.run, "all"))
        assert "has no counters for a hierarchical roofline" in (r.roofline_note or "")
    assert any("bytes_dram: none of dram__bytes.sum" in (r.roofline_note or "") for r in bare)


@pytest.mark.parametrize("given", [False, True])
@pytest.mark.parametrize("ceilings", ["default", "datasheet"])
def test_charts_are_given_before_the_other_tables(
    store: Store, ceilings: str, given: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """report_runs(drawn=...) gives each run's chart data as soon as they are read: every hierarchical roofline
    first (the RunReport's points and ceilings, runs without a point left out), then every time-based roofline
    (the RunReport's time), all before physics_checks and the top tables are read, with the runs given or
    selected."""
    from rooflake.views import report as report_view

    events: list[tuple[str, ...]] = []
    shown: dict[tuple[str, str], Any] = {}
    read = report_view.fetch

    def fetched(con: Any, name: str, *args: Any, **kw: Any) -> Any:
        events.append(("fetch", name))
        return read(con, name, *args, **kw)

    def drawn(name: str, run_id: str, data: Any) -> None:
        events.append(("drawn", name))
        shown[(name, run_id)] = data

    monkeypatch.setattr(report_view, "fetch", fetched)
    ids, runs = report_view.report_runs(
        store, ceilings=ceilings, drawn=drawn, run_ids=_ids(store) if given else None
    )
    reports = {r.run_id: r for r in runs}
    assert list(reports) == ids
    kinds = [e[1] for e in events if e[0] == "drawn"]
    firsts = [events.index(("fetch", name)) for name in ("physics_checks", "top_layers", "top_kernels")]
    assert kinds == sorted(kinds) and "time-based roofline" in kinds  # "hierarchical ..." < "time-based ..."
    assert max(i for i, e in enumerate(events) if e[0] == "drawn") < min(firsts)
    for rid, r in reports.items():
        roofline = shown.get(("hierarchical roofline", rid))
        if r.points.num_rows and r.roofline_note is None:
            same_table(roofline[0], r.points)
            same_table(roofline[1], r.ceilings)
        else:
            assert roofline is None
        assert shown.get(("time-based roofline", rid)) is r.time
    assert sum(r.points.num_rows > 0 for r in reports.values()) >= 2 and len(shown) >= 4
