"""rl report: a self-contained page from fixture runs, rendered in headless Chromium (every chart drawn, no
console errors), PNG/SVG beside it, atomic and idempotent output."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rooflake.cli import app
from rooflake.schema import QueryError
from rooflake.store import Store
from rooflake.views import report as report_view

from _support import fixture

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--enable-logging=stderr", "--v=0", "--virtual-time-budget=20000",
]  # fmt: skip


def render(page: Path, profile: Path) -> tuple[str, list[str]]:
    """The DOM after scripts ran, and the page's console messages at warning level or above."""
    p = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    console = [
        ln for ln in p.stderr.splitlines() if ":CONSOLE" in ln and not ln.split(":")[2].startswith("INFO")
    ]
    return p.stdout, console


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("report")
    store = tmp / "store"
    for name, batch in (
        ("AveryClapp__ESMM-Research__profile_output", "1"),
        ("AlpriElse", "1"),
        ("eschnett", "2"),
    ):
        r = CliRunner().invoke(
            app, ["ingest", str(fixture(name)), "--store", str(store), "-l", f"batch={batch}"]
        )
        assert r.exit_code == 0, r.stderr
    r = CliRunner().invoke(app, ["report", "--store", str(store), "--out", str(tmp / "out")])
    assert r.exit_code == 0, r.stderr
    assert "3 runs" in r.stdout
    return tmp / "out"


def test_files(report_dir: Path) -> None:
    page = (report_dir / "index.html").read_text()
    assert "<script src" not in page and "cdn" not in page.lower()  # everything inline: opens offline
    svgs, pngs = sorted((report_dir / "charts").glob("*.svg")), sorted((report_dir / "charts").glob("*.png"))
    assert len(svgs) == len(pngs) == page.count("class='chart'") >= 3
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in pngs)
    assert "physics warnings" in page and "top layers" in page and "kernels without FLOPs" in page
    assert "time-based roofline" in page
    assert "compared with the previous run of the same labels" in page  # ESMM then H100 share batch=1


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (Debian package chromium)")
def test_renders_in_chromium(report_dir: Path, tmp_path: Path) -> None:
    dom, console = render(report_dir / "index.html", tmp_path / "profile")
    charts = re.findall(r'<div id="(chart-[0-9-]+)" class="chart[^"]*"[^>]*>(.*?)</div>', dom, re.S)
    assert len(charts) >= 3
    for div, inner in charts:
        assert "<svg" in inner and "<path" in inner, f"{div} drew nothing"
    assert console == []


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (Debian package chromium)")
def test_console_errors_are_detected(tmp_path: Path) -> None:
    page = tmp_path / "bad.html"
    page.write_text("<html><body><script>console.error('boom'); undefinedFunction();</script></body></html>")
    _, console = render(page, tmp_path / "profile")
    assert console, "the console check cannot see errors"


def test_rerun_is_idempotent_and_atomic(report_dir: Path, tmp_path: Path) -> None:
    first = (report_dir / "index.html").read_bytes()
    store = report_dir.parent / "store"
    r = CliRunner().invoke(app, ["report", "--store", str(store), "--out", str(report_dir)])
    assert r.exit_code == 0
    assert (report_dir / "index.html").read_bytes() == first
    assert not [p for p in report_dir.parent.iterdir() if p.name.startswith(".out.")]  # no temp dirs left
    r = CliRunner().invoke(app, ["report", "--store", str(store), "--out", str(report_dir), "--since", "1x"])
    assert r.exit_code == 2 and r.stderr.startswith("Error: --since")  # a bad argument
    assert (report_dir / "index.html").read_bytes() == first  # a failed run leaves the last report


def test_a_report_that_cannot_be_written_cancels_its_charts(
    report_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An output directory under a file: one Error line naming it, exit 1, and the renderers stopped with the
    charts laid out ahead and not yet written cancelled (engine.stop), not drawn before rl exits."""
    from rooflake.render import engine

    stopped: list[dict[str, object]] = []
    stop = engine.stop

    def stopping() -> None:
        stopped.append(dict(engine._laid_out))
        stop()

    monkeypatch.setattr(engine, "stop", stopping)
    (tmp_path / "file").write_text("")
    store = report_dir.parent / "store"
    r = CliRunner().invoke(app, ["report", "--store", str(store), "--out", str(tmp_path / "file" / "out")])
    assert r.exit_code == 1 and r.stderr.count("Error:") == 1 and "file" in r.stderr
    assert len(stopped) == 1 and stopped[0]  # charts were laid out ahead when it failed
    assert engine._pool is None and engine._png_pool is None and engine._laid_out == {}


def test_view_and_a_skipped_comparison(report_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The report view: each run with its tables and the previous run of its labels; a comparison that fails is
    skipped with a note that says so on the page."""
    store = Store(report_dir.parent / "store")
    rep = report_view.report(store)
    assert len(rep.run_ids) == len(rep.runs) == 3
    compared = [r for r in rep.runs if r.previous]
    assert len(compared) == 1 and compared[0].comparison is not None and compared[0].comparison_note is None
    assert compared[0].top_kernels.column_names == [
        "name",
        "launches",
        "kernel_time_ns",
        "share_of_kernel_time",
    ]

    def broken(*args: object, **kwargs: object) -> None:
        raise QueryError("comparing: the base run's files are damaged")

    monkeypatch.setattr(report_view, "compare", broken)
    (r,) = [r for r in report_view.report(store).runs if r.previous]
    assert r.comparison is None
    assert r.comparison_note == (
        f"no comparison with the previous run of the same labels {r.previous}: "
        "comparing: the base run's files are damaged"
    )
    out = report_dir.parent / "skipped"
    res = CliRunner().invoke(app, ["report", "--store", str(store.root), "--out", str(out)])
    assert res.exit_code == 0, res.stderr
    assert "no comparison with the previous run of the same labels" in (out / "index.html").read_text()


def test_given_runs_are_selected_from_their_own_files(report_dir: Path) -> None:
    """--runs: the given ids (prefixes too), in the order given, kept only where --where's labels hold; their
    previous runs still found among every run of the store."""
    from rooflake.schema import RunNotFoundError

    store = Store(report_dir.parent / "store")
    everyone = report_view.report(store).run_ids
    batch1 = report_view.select_runs(store, where={"batch": "1"})
    assert len(everyone) == 3 and len(batch1) == 2
    picked = report_view.select_runs(store, run_ids=[everyone[2][:6], everyone[0]])
    assert picked == [everyone[2], everyone[0]]
    assert report_view.select_runs(store, run_ids=everyone, where={"batch": "1"}) == batch1
    ids, runs = report_view.report_runs(store, run_ids=[batch1[1]])
    assert ids == [batch1[1]] and [r.previous for r in runs] == [batch1[0]]
    with pytest.raises(RunNotFoundError):
        report_view.select_runs(store, run_ids=["zzzz"])
    with pytest.raises(RunNotFoundError, match="matches the report's selection"):
        report_view.select_runs(store, run_ids=[everyone[2]], where={"batch": "nope"})


def test_a_run_without_counters_says_what_it_lacks(tmp_path: Path) -> None:
    """A run whose kernels have no roofline counters (an nsys export, an ncu report without the sections) was noted
    as "of 0 kernel(s), none has roofline rows… or choose another level or precision": rl report has neither
    option, and the runs held 64 and 1 kernels. The note says what the run lacks, as rl roofline does."""
    store = tmp_path / "store"
    vecadd = fixture("NVIDIA__nsight-training__cuda__nsight_compute__sample_reports__CuVectorAddDrv")
    assert CliRunner().invoke(app, ["ingest", str(vecadd), "--store", str(store)]).exit_code == 0
    r = CliRunner().invoke(app, ["report", "--store", str(store), "--out", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    page = (tmp_path / "out" / "index.html").read_text()
    assert "of 0 kernel(s)" not in page and "another level or precision" not in page
    assert "has no counters for a hierarchical roofline: bytes_dram: none of dram__bytes.sum" in page
