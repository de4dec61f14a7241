"""Charts fast (issue 14): the unvalidated spec equals Altair's validated one for every chart kind, and a report
renders its charts in renderer processes (rooflake.render.engine), errors included."""

from __future__ import annotations

import os
import re
from pathlib import Path

import polars as pl
import pytest

from rooflake.pipeline import ingest_paths
from rooflake.render import (
    complexity_plane_chart,
    engine,
    roofline_chart,
    save_chart,
    spec_dict,
    time_roofline_chart,
    time_vs_complexity_chart,
    trajectory_chart,
)
from rooflake.render.report import write_report
from rooflake.schema import OutputError
from rooflake.store import Store
from rooflake.views.roofline import roofline
from rooflake.views.time_roofline import time_roofline

from _support import fixture


@pytest.fixture(scope="module")
def charts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("store")
    (r,) = list(ingest_paths([fixture("AveryClapp__ESMM-Research__profile_output")], root))
    v = roofline(Store(root), r.run_id, "all")
    t = time_roofline(Store(root), r.run_id, level="dram", launch_overhead_ns=1000)
    # a trajectory over the run's kernels as if each were one step of a sweep (real AI and FLOP/s)
    steps = [
        {"series": "model=m", "entity": "k", "level": "dram", "run_id": f"{r.run_id[:-1]}{i}", "value": str(i),
         "step": i, "ai": row["ai_dram"], "flops_per_s": row["achieved_flops_per_s"]}
        for i, row in enumerate(v.points.to_pylist(), start=1)
        if row["ai_dram"] and row["achieved_flops_per_s"]
    ]  # fmt: skip
    return {
        "roofline": roofline_chart(v.points, v.ceilings, level="all", precision="all", title="t"),
        "roofline dram": roofline_chart(v.points, v.ceilings, level="dram", precision="all"),
        "time": time_roofline_chart(t.points, t.ceilings, level="dram"),
        "time vs complexity": time_vs_complexity_chart(t.points, t.ceilings, level="l2"),
        "complexity plane": complexity_plane_chart(t.points, t.ceilings, level="dram"),
        "trajectory": trajectory_chart(pl.DataFrame(steps), v.ceilings, level="dram"),
    }


def test_the_fast_spec_is_the_validated_spec(charts) -> None:
    """Altair's to_dict() rebuilds every layered or concatenated chart with its own constructor, so this also
    checks that rooflake.render.compose builds the charts Altair would (names of concatenated layers included)."""
    for name, chart in charts.items():
        validated = chart.to_dict()  # type: ignore[attr-defined]  # raises when the spec breaks the schema
        assert spec_dict(chart) == validated, name
        assert spec_dict(chart) == validated, name  # the chart is left as it was
    time = spec_dict(charts["time"])
    names = [lyr["name"] for panel in time["vconcat"][0]["hconcat"] for lyr in panel["layer"]]
    assert "tc_flops_measured_0" in names and "tc_bytes_measured_1" in names
    assert all(lyr["name"].endswith("_1") for lyr in time["vconcat"][1]["layer"])


def test_a_report_renders_in_renderer_processes(charts, tmp_path) -> None:
    engine.start(2)
    try:
        assert engine.submit(os.getpid).result() != os.getpid()
        sections = [
            {"title": "a", "charts": [("r", charts["roofline"]), ("t", charts["time"])]},
            {"title": "b", "charts": [("r", charts["roofline"])]},
        ]
        res = write_report(sections, tmp_path / "rep")
    finally:
        engine.stop()
    files = sorted(p.name for p in (tmp_path / "rep" / "charts").iterdir())
    assert res["charts"] == 3 and len(files) == 6
    assert all((tmp_path / "rep" / "charts" / f).stat().st_size > 1000 for f in files)
    assert (tmp_path / "rep" / "charts" / files[0]).read_bytes()[:4] in (b"\x89PNG", b"<svg")


def test_a_chart_laid_out_by_a_renderer_is_drawn_as_png_by_a_png_process(charts, tmp_path) -> None:
    """With two workers, one renderer (JavaScript engine) lays out the SVG and a PNG process draws the PNG from it:
    the PNG is the one vl-convert draws of that SVG, and an error of either step reaches the caller."""
    import json

    import vl_convert as vlc

    engine.start(2)
    try:
        assert engine._png_pool is not None and engine._pool is not None
        pids = {engine._pool.submit(os.getpid).result(), engine._png_pool.submit(os.getpid).result()}
        assert len(pids) == 2 and os.getpid() not in pids
        spec = json.dumps(spec_dict(charts["time"]), allow_nan=False)
        svg, png = str(tmp_path / "t.svg"), str(tmp_path / "t.png")
        engine.render(spec, [(svg, "svg", 1.0), (png, "png", 1.0)]).result()
        (tmp_path / "file").write_text("")
        with pytest.raises(OutputError, match="file"):  # the PNG step fails, the SVG is written
            engine.render(
                spec, [(str(tmp_path / "b.svg"), "svg", 1.0), (str(tmp_path / "file" / "b.png"), "png", 1.0)]
            ).result()
        with pytest.raises(OutputError, match="file"):  # the SVG step fails, no PNG is drawn
            engine.render(
                spec, [(str(tmp_path / "file" / "c.svg"), "svg", 1.0), (str(tmp_path / "c.png"), "png", 1.0)]
            ).result()
    finally:
        engine.stop()
    laid_out = Path(svg).read_text(encoding="utf-8")
    assert laid_out.startswith("<svg") and Path(png).read_bytes() == vlc.svg_to_png(laid_out, scale=1.0)
    assert (tmp_path / "b.svg").stat().st_size > 1000 and not (tmp_path / "c.png").exists()
    assert engine._pool is None and engine._png_pool is None


def test_a_chart_laid_out_ahead_is_written_from_that_layout(charts, tmp_path) -> None:
    """lay_out() starts the SVG before its files are known; render() of the same spec then writes that SVG and the
    PNG drawn from it (the files equal those of render() alone) and takes it off the laid-out charts; an error
    laying it out reaches render()'s future; without renderer processes, or once they stop, nothing is kept."""
    import json

    good = json.dumps(spec_dict(charts["time"]), allow_nan=False)
    bad = json.dumps({"mark": "point", "encoding": {"x": {"field": "a", "type": "no such type"}}})

    def files(name: str) -> list[tuple[str, str, float]]:
        return [(str(tmp_path / f"{name}.svg"), "svg", 1.0), (str(tmp_path / f"{name}.png"), "png", 1.0)]

    engine.lay_out(good)  # no processes: nothing laid out
    assert engine._laid_out == {}
    engine.start(2)
    try:
        engine.render(good, files("alone")).result()
        engine.lay_out(good)
        engine.lay_out(bad)
        assert set(engine._laid_out) == {good, bad}
        ahead = engine._laid_out[good]
        engine.render(good, files("ahead")).result()
        assert ahead.done() and good not in engine._laid_out
        with pytest.raises(Exception, match="conversion failed"):
            engine.render(bad, files("bad")).result()
        engine.lay_out(good)
    finally:
        engine.stop()
    assert engine._laid_out == {} and engine._queued == [0, 0]
    # a renderer numbers its clip paths across the charts it lays out: the same drawing, other ids
    (alone, ahead) = (
        re.sub(r"clip\d+", "clip", (tmp_path / f"{n}.svg").read_text()) for n in ("alone", "ahead")
    )
    assert len(alone) > 1000 and ahead == alone
    assert (tmp_path / "ahead.png").read_bytes() == (tmp_path / "alone.png").read_bytes()
    assert not (tmp_path / "bad.svg").exists() and not (tmp_path / "bad.png").exists()


def test_charts_queued_when_the_processes_stop_end_cancelled_or_drawn(charts, tmp_path) -> None:
    """stop() cancels the charts still queued: every render future ends (concurrent.futures.wait sees them all
    done), none of them with an error, and the work counters go back to zero."""
    import concurrent.futures as cf
    import json

    spec = json.dumps(spec_dict(charts["roofline"]), allow_nan=False)
    engine.start(2)
    futures = [
        engine.render(
            spec, [(str(tmp_path / f"{i}.svg"), "svg", 1.0), (str(tmp_path / f"{i}.png"), "png", 1.0)]
        )
        for i in range(12)
    ]
    engine.stop()
    done, pending = cf.wait(futures, timeout=60)
    assert not pending and any(f.cancelled() for f in futures)
    assert all(f.cancelled() or f.exception() is None for f in futures)
    assert engine._queued == [0, 0]


def test_a_renderer_error_reaches_the_caller(charts, tmp_path) -> None:
    (tmp_path / "file").write_text("")
    engine.start(1)
    try:
        with pytest.raises(OutputError, match="file"):
            save_chart(charts["roofline"], tmp_path / "file" / "x.png")  # a parent that is a file
        save_chart(charts["roofline"], tmp_path / "ok.svg")
    finally:
        engine.stop()
    assert Path(tmp_path / "ok.svg").read_text().startswith("<svg")


def test_the_javascript_bundle_is_built_once_and_kept(tmp_path, monkeypatch) -> None:
    import vl_convert as vlc

    monkeypatch.setenv("RL_CACHE_DIR", str(tmp_path / "cache"))
    built = engine.javascript_bundle()
    (kept,) = (tmp_path / "cache").iterdir()
    assert kept.read_text(encoding="utf-8") == built == vlc.javascript_bundle()  # type: ignore[call-arg]
    assert "vega-embed" in built or "vegaEmbed" in built
    kept.write_text("// kept", encoding="utf-8")  # the next report reads the kept file, not vl-convert
    assert engine.javascript_bundle() == "// kept"
    (tmp_path / "file").write_text("")
    monkeypatch.setenv(
        "RL_CACHE_DIR", str(tmp_path / "file" / "cache")
    )  # cannot be written: no cache, no error
    assert engine.javascript_bundle() == built


def test_one_chart_renders_in_this_process_its_engine_warmed_on_a_thread(charts, tmp_path) -> None:
    import multiprocessing

    engine.start_for(tmp_path / "r.png")
    assert engine.submit(os.getpid).result() == os.getpid()
    assert not multiprocessing.active_children()  # no renderer process for one chart
    save_chart(charts["roofline"], tmp_path / "r.png")
    assert (tmp_path / "r.png").read_bytes()[:4] == b"\x89PNG"
