"""`rl compare --ceilings SOURCE` and the report's comparison: each kernel's bound and fraction of roof are taken
against the roofs `rl roofline --ceilings SOURCE` draws for its run (kernel_roofs shadowed as the roofline view
shadows it), on a real before/after pair: the hand-written FlashAttention forward on an RTX 4060 Ti
(Bias92/flashattn-cuda, `--set full`, Tensor Cores) and its optimised twin, one label, so the report compares the
second with the first. The datasheet has no Tensor-Core peak for that GPU: the tensor kernels' bound is NULL there,
as `rl roofline --ceilings datasheet` leaves it, never another precision's roof."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rooflake import queries
from rooflake.cli import app
from rooflake.pipeline import ingest_paths
from rooflake.schema import RooflineDataError, UsageError
from rooflake.store import Store
from rooflake.views import report as report_view
from rooflake.views.compare import compare
from rooflake.views.roofline import roofline

from _support import fixture

BEFORE = fixture("Bias92__flashattn-cuda__docs__profiling__ncu_sections__fa3_before")
AFTER = fixture("Bias92__flashattn-cuda__docs__profiling__ncu_sections__db_full_after")
LABEL = {"model": "fa"}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("compare_ceilings")
    for path in (BEFORE, AFTER):  # one at a time: AFTER is the later run, compared with BEFORE
        assert [r.status for r in ingest_paths([path], root, LABEL, workers=1)] == ["ingested"]
    return root


def _runs(store: Path) -> tuple[str, str]:
    con = queries.connect(Store(store))
    ids = [
        con.execute("SELECT run_id FROM runs WHERE source_path = ?", [str(p.resolve())]).fetchone()[0]
        for p in (BEFORE, AFTER)
    ]
    return ids[0], ids[1]


def _dominant(store: Path, run_id: str, ceilings: str) -> dict[str, tuple]:
    """kernel name -> (bound, fraction_of_roof) of its dominant precision, as `rl roofline --ceilings` gives it."""
    points = roofline(Store(store), run_id, "all", ceilings=ceilings).points.to_pylist()
    return {p["name"]: (p["bound"], p["fraction_of_roof"]) for p in points if p["is_dominant"]}


@pytest.mark.parametrize("source", ["report", "datasheet"])
def test_bounds_are_those_rl_roofline_draws(store: Path, source: str) -> None:
    base, new = _runs(store)
    c = compare(Store(store), base, new, ceilings=source)
    assert c.ceilings == source
    rows = c.kernels.to_pylist()
    assert rows
    for side, run in (("base", base), ("new", new)):
        want = _dominant(store, run, source)
        for r in rows:
            name = r["name"] if side == "base" else r["new_name"]
            if r[f"{side}_launches"]:
                bound, fraction = want[name]
                assert r[f"{side}_bound"] == bound
                assert (
                    r[f"{side}_fraction_of_roof"] == pytest.approx(fraction, nan_ok=True) or fraction is None
                )
    layers = c.layers.to_pylist()
    if source == "datasheet":  # no Tensor-Core peak for this GPU in the datasheet: NULL, not the FP32 roof
        assert {(r["base_bound"], r["new_bound"]) for r in rows} == {(None, None)}
        assert {(r["base_bound"], r["new_bound"]) for r in layers} == {(None, None)}


def test_default_is_each_runs_own_report_peaks(store: Path) -> None:
    base, new = _runs(store)
    default, report = compare(Store(store), base, new), compare(Store(store), base, new, ceilings="report")
    assert default.ceilings == "default"
    assert default.kernels == report.kernels and default.layers == report.layers
    assert {(r["base_bound"], r["new_bound"]) for r in default.kernels.to_pylist()} == {("TENSOR", "TENSOR")}
    datasheet = compare(Store(store), base, new, ceilings="datasheet")
    assert datasheet.kernels.column("base_time_ns") == default.kernels.column(
        "base_time_ns"
    )  # times unchanged


def test_a_source_without_the_machine_and_all_are_refused(store: Path) -> None:
    base, new = _runs(store)
    with pytest.raises(RooflineDataError, match="no measured ceilings for its machine"):
        compare(Store(store), base, new, ceilings="measured")
    with pytest.raises(UsageError, match="a bound is taken against one"):
        compare(Store(store), base, new, ceilings="all")
    run = CliRunner().invoke
    r = run(app, ["compare", base, new, "--ceilings", "measured", "--store", str(store)])
    assert r.exit_code == 1 and r.stderr.startswith("Error: ") and len(r.stderr.splitlines()) == 1, r.output
    r = run(app, ["compare", base, new, "--ceilings", "all", "--store", str(store)])
    assert r.exit_code == 2 and "a bound is taken against one" in r.stderr, r.output
    r = run(app, ["compare", base, new, "--ceilings", "datasheet", "-f", "json", "--store", str(store)])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["ceilings"] == "datasheet" and {k["base_bound"] for k in doc["kernels"]} == {None}
    for fmt in ("table", "markdown"):  # the text formats say it in the verdict
        r = run(app, ["compare", base, new, "--ceilings", "datasheet", "-f", fmt, "--store", str(store)])
        assert r.exit_code == 0 and "bounds against --ceilings datasheet" in r.stdout, r.output
    assert "bounds against" not in run(app, ["compare", base, new, "--store", str(store)]).stdout


def test_the_reports_comparison_follows_its_ceilings(store: Path) -> None:
    """`rl report --ceilings datasheet` drew the charts on the datasheet and the comparison's bounds on the report
    peaks (issue 14's carried note). Now both on the datasheet; a source that lacks the machine (measured) leaves
    the comparison on the report peaks, and the run's notes say so."""
    base, new = _runs(store)
    for ceilings, bounds_on in (("default", "default"), ("all", "default"), ("datasheet", "datasheet")):
        (later,) = [
            r
            for r in report_view.report(Store(store), where=LABEL, ceilings=ceilings).runs
            if r.run_id == new
        ]
        assert later.previous == base and later.comparison is not None
        assert later.comparison.ceilings == bounds_on and later.comparison_note is None
        assert later.comparison.kernels == compare(Store(store), base, new, ceilings=bounds_on).kernels
    (later,) = [
        r for r in report_view.report(Store(store), where=LABEL, ceilings="measured").runs if r.run_id == new
    ]
    assert later.comparison is not None and later.comparison.ceilings == "default"
    assert later.comparison_note is not None and "report peaks" in later.comparison_note


def test_the_report_page_says_what_the_bounds_are_against(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "rep"
    r = CliRunner().invoke(
        app,
        [
            "report",
            "--where",
            "model=fa",
            "--ceilings",
            "datasheet",
            "--out",
            str(out),
            "--store",
            str(store),
        ],
    )
    assert r.exit_code == 0, r.output
    page = (out / "index.html").read_text()
    assert "total GPU time" in page and "bounds against --ceilings datasheet" in page
