"""`rl report --ceilings SOURCE`: each run's roofline and time-based roofline are drawn against the roofs `rl roofline
--ceilings SOURCE` draws for that run (the same points, rows and roofs: views.roofline.roofline and
views.time_roofline.time_roofline), the page names them, and a run whose machine has no ceiling from that source gets
a note; without the option the report is what it was (each launch's own report peaks, run_ceilings rows). Real
reports: the A10G SGEMMs (AveryClapp/ESMM) and the H100 PCIe silu kernels (AlpriElse/cs599k) of one label, so the
H100 run is compared with the A10G one, and the kingspeak P100 ERT results labelled for the H100."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from rooflake import queries
from rooflake.cli import app
from rooflake.pipeline import ingest_paths
from rooflake.render.save import spec_dict
from rooflake.schema import RooflineDataError, UsageError
from rooflake.store import Store
from rooflake.views import report as report_view
from rooflake.views.roofline import roofline
from rooflake.views.time_roofline import time_roofline

from _support import FIXTURES, fixture, same_table

A10G = fixture("AveryClapp__ESMM-Research__profile_output")
H100 = fixture("AlpriElse__cs599k")
ERT_P100 = (
    FIXTURES
    / "ert"
    / "WeakKnight__roofline__ERT__Results__Results.kingspeak-p100-gpu.01__Run.002__roofline.json"
)
BATCH = {"batch": "1"}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("report_ceilings") / "store"
    for report in (A10G, H100):  # one at a time: the H100 run is the later one, compared with the A10G run
        assert [r.status for r in ingest_paths([report], root, BATCH, workers=1)] == ["ingested"]
    assert [r.status for r in ingest_paths([ERT_P100], root, {"gpu": "NVIDIA H100 PCIe"})] == ["ingested"]
    return root


def _run(store: Path, report: Path) -> str:
    con = queries.connect(Store(store))
    return con.execute("SELECT run_id FROM runs WHERE source_path = ?", [str(report.resolve())]).fetchone()[0]


def _reports(store: Path, ceilings: str) -> dict[str, report_view.RunReport]:
    rep = report_view.report(Store(store), where=BATCH, ceilings=ceilings)
    return {r.run_id: r for r in rep.runs}


@pytest.mark.parametrize("source", ["report", "datasheet", "all"])
def test_each_run_is_drawn_against_what_rl_roofline_draws(store: Path, source: str) -> None:
    reports = _reports(store, source)
    assert len(reports) == 2
    for rid, r in reports.items():
        want = roofline(Store(store), rid, "all", ceilings=source)
        assert r.roofs == source and r.roofline_note is None
        same_table(r.points, want.points)
        same_table(r.ceilings, want.ceilings)
        assert r.time is not None
        t = time_roofline(Store(store), rid, launch_overhead_ns=r.time.launch_overhead, ceilings=source)
        same_table(r.time.rows, t.rows)
        same_table(r.time.ceilings, t.ceilings)
    sources = {rid: set(r.ceilings.column("source").to_pylist()) for rid, r in reports.items()}
    if source == "datasheet":
        assert all(s == {"datasheet"} for s in sources.values())
        h100 = reports[_run(store, H100)]
        fp32 = [p for p in h100.points.to_pylist() if p["precision"] == "fp32"]
        assert fp32 and all((p["bw_dram"], p["peak_flops_per_s"]) == (2000e9, 51e12) for p in fp32)
    if source == "all":  # the ERT results labelled for the H100 drawn dashed beside its own peaks
        assert sources[_run(store, H100)] == {"ncu-report", "ert", "datasheet"}


def test_a_source_without_ceilings_for_a_machine_is_a_note(store: Path) -> None:
    """ERT results exist for the H100 only: the A10G run gets the error rl roofline gives, as a note."""
    from rooflake.cli.report_cmds import section  # here: importing it at collection reorders rl --help

    reports = _reports(store, "ert")
    a10g, h100 = reports[_run(store, A10G)], reports[_run(store, H100)]
    with pytest.raises(RooflineDataError) as e:
        roofline(Store(store), a10g.run_id, "all", ceilings="ert")
    assert a10g.roofline_note == str(e.value) and a10g.time is None and str(e.value) in (a10g.time_note or "")
    sec = section(a10g)
    assert sec["charts"] == [] and f"no roofline: {e.value}" in sec["notes"]
    assert h100.roofline_note is None and set(h100.ceilings.column("source").to_pylist()) == {"ert"}
    with pytest.raises(UsageError, match="unknown ceiling source 'boost'"):
        report_view.report(Store(store), ceilings="boost")


def test_the_page_and_the_charts_name_the_source(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "ds"
    args = ["report", "--store", str(store), "--where", "batch=1", "--out", str(out)]
    r = CliRunner().invoke(app, [*args, "--ceilings", "datasheet"])
    assert r.exit_code == 0, r.output
    page = (out / "index.html").read_text()
    for gpu in ("A10G", "H100 PCIe"):
        assert (
            f"roofline and time-based roofline against --ceilings datasheet, roofs: datasheet ({gpu})" in page
        )
    # the roofs drawn: the legends' labels in the specs and the SVGs rendered from them
    assert "FP32 51 TFLOP/s (datasheet, boost clock 1.75 GHz)" in page
    assert "T = F/P, FP32 51 TFLOP/s (datasheet, boost clock 1.75 GHz)" in page
    h100 = sorted((out / "charts").glob("01-*.svg"))
    assert len(h100) == 2 and all("(datasheet, boost clock 1.75 GHz)" in p.read_text() for p in h100)
    assert "(ncu-report" not in page  # no legend names the report's own peaks
    bad = CliRunner().invoke(app, [*args, "--ceilings", "boost"])
    assert bad.exit_code == 2 and "--ceilings" in bad.output


def test_the_default_is_what_the_report_drew(store: Path, tmp_path: Path) -> None:
    """Without --ceilings: the store's kernel_roofline on each launch's own peaks and its run_ceilings rows (no
    source_label, no note), the roofline spec from them; the page names no source."""
    from rooflake.cli.report_cmds import section  # here: importing it at collection reorders rl --help

    con = queries.connect(Store(store))
    reports = _reports(store, "default")
    for rid, r in reports.items():
        assert r.roofs == "default" and r.roofline_note is None
        same_table(r.points, queries.fetch(con, "kernel_roofline", filters={"run_id": rid}))
        same_table(r.ceilings, queries.fetch(con, "run_ceilings", filters={"run_id": rid}))
        sec = section(r)
        assert not any("--ceilings" in n for n in sec["notes"])
        (name, chart), _ = sec["charts"]
        assert name == "hierarchical roofline" and "(datasheet" not in str(spec_dict(chart))
    out = tmp_path / "default"
    r = CliRunner().invoke(app, ["report", "--store", str(store), "--where", "batch=1", "--out", str(out)])
    assert r.exit_code == 0, r.output
    page = (out / "index.html").read_text()
    assert "--ceilings" not in page and "datasheet" not in page
    assert "compared with the previous run of the same labels" in page


def test_roofs_are_asked_once_per_run(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hierarchical and the time-based roofline share each run's run_roofs (from the whole store)."""
    calls: list[str] = []
    real = report_view.run_roofs

    def counting(store_: Store, rid: str, *args: object, **kwargs: object) -> object:
        calls.append(rid)
        return real(store_, rid, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(report_view, "run_roofs", counting)
    monkeypatch.setattr("rooflake.views.time_roofline.run_roofs", counting)
    ids, runs = report_view.report_runs(Store(store), where=BATCH, ceilings="datasheet")
    list(runs)
    assert sorted(calls) == sorted(ids)
