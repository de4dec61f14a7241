"""The time-based roofline's specs, built as dicts without Altair (issue 14: ``rl report`` imports no Altair), are
the specs the Altair implementation wrote: golden JSON text of real fixture reports (tests/data/golden_specs, key
order included), and the Altair charts of the same functions give the same dict, validated against Vega-Lite."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from rooflake.pipeline import ingest_paths
from rooflake.render import (
    complexity_plane_chart,
    complexity_plane_spec,
    spec_dict,
    time_roofline_chart,
    time_roofline_spec,
    time_vs_complexity_chart,
    time_vs_complexity_spec,
)
from rooflake.store import Store
from rooflake.views.time_roofline import time_roofline

from _support import fixture

GOLDEN = Path(__file__).parent / "data" / "golden_specs"
REPORTS = {
    "armleth": "armleth__cuda-mlp-inference__report",
    "cutlass-s4": "panjd123__cutlass__report-s4",
    "esmm": "AveryClapp__ESMM-Research__profile_output",
}
KINDS = {
    "time": (time_roofline_spec, time_roofline_chart),
    "tvc": (time_vs_complexity_spec, time_vs_complexity_chart),
    "cp": (complexity_plane_spec, complexity_plane_chart),
}
# golden file -> (report, grain, level, ceilings, t_o in ns or None for the run's default, title)
CASES: dict[str, tuple[str, str, str, str, float | None, Any]] = {
    "armleth-kernel-dram-all-time": ("armleth", "kernel", "dram", "all", None, None),
    "cutlass-s4-layer-dram-all-time": ("cutlass-s4", "layer", "dram", "all", None, None),
    "esmm-kernel-l2-default-tvc": ("esmm", "kernel", "l2", "default", 2000.0, "T"),
    "esmm-kernel-l2-default-cp": ("esmm", "kernel", "l2", "default", 2000.0, ["a", "b <c>"]),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, dict[str, str]]:
    root = tmp_path_factory.mktemp("store")
    ids = {}
    for key, name in REPORTS.items():
        (r,) = list(ingest_paths([fixture(name)], root))
        ids[key] = r.run_id
    return Store(root), ids


def _inputs(runs: tuple[Store, dict[str, str]], case: str) -> tuple[Any, Any, str, Any, str]:
    store, ids = runs
    report, grain, level, ceilings, t_o, title = CASES[case]
    v = time_roofline(store, ids[report], grain=grain, level=level, launch_overhead_ns=t_o, ceilings=ceilings)
    return v.points, v.ceilings, level, title, case.rsplit("-", 1)[1]


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_spec_is_the_golden_spec(runs, case: str) -> None:
    points, ceilings, level, title, kind = _inputs(runs, case)
    text = json.dumps(KINDS[kind][0](points, ceilings, level=level, title=title), allow_nan=False, indent=0)
    path = GOLDEN / f"{case}.json"
    if os.environ.get("RL_WRITE_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_altair_chart_is_the_spec_and_valid(runs, case: str) -> None:
    points, ceilings, level, title, kind = _inputs(runs, case)
    spec = KINDS[kind][0](points, ceilings, level=level, title=title)
    chart = KINDS[kind][1](points, ceilings, level=level, title=title)
    assert spec_dict(chart) == spec
    assert chart.to_dict() == spec  # type: ignore[attr-defined]  # validated against the Vega-Lite schema


def test_golden_specs_draw_what_they_claim() -> None:
    """The golden files hold what their cases exercise: other sources' roofs dashed, layers' n·t_o ticks, a chart
    without the plane, both panels named by position, the plane alone unnumbered."""
    spec = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in GOLDEN.glob("*.json")}
    assert set(spec) == set(CASES)
    overlaid = spec["armleth-kernel-dram-all-time"]["datasets"]["rl_tc_flops_lines"]
    assert (
        any(r["kind"] == "overlay" for r in overlaid)
        and len(spec["armleth-kernel-dram-all-time"]["vconcat"]) == 2
    )
    no_plane = spec["cutlass-s4-layer-dram-all-time"]
    assert len(no_plane["vconcat"]) == 1 and "No complexity plane" in no_plane["title"]["subtitle"][-1]
    names = [lyr["name"] for panel in no_plane["vconcat"][0]["hconcat"] for lyr in panel["layer"]]
    assert "tc_flops_floors_0" in names and "tc_bytes_floors_1" in names
    assert spec["esmm-kernel-l2-default-tvc"]["title"]["text"] == "T"
    assert all(not lyr["name"][-1].isdigit() for lyr in spec["esmm-kernel-l2-default-cp"]["layer"])
