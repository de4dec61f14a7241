"""The roofline's and the time-based roofline's lines and boxes are drawn without Vega-Lite's mark ``clip``: vega
writes a clip path around each line, and vl-convert's PNG (resvg) draws each clipped group through a mask of the
whole canvas (a report's PNGs took twice as long). That is only right when every line's and box's points lie in
the plot: checked here on every fixture run (hierarchical roofline, every ceiling source) and on the time-based
rooflines' golden specs. The trajectory's roofs keep their clip (its y range need not cover them); text keeps its
clip (a label's extent is not known before it is laid out)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rooflake.render.roofline import roofline_spec
from rooflake.schema import RooflineDataError
from rooflake.store import Store
from rooflake.views.roofline import roofline

GOLDEN = Path(__file__).parent / "data" / "golden_specs"
_SPANNED = {"x": "x", "x2": "x", "y": "y", "y2": "y"}  # x2 and y2 share the scale of x and y


def _units(spec: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every unit layer (a ``mark``) of ``spec``, through layer / hconcat / vconcat / concat."""
    if "mark" in spec:
        yield spec
    for key in ("layer", "hconcat", "vconcat", "concat"):
        for sub in spec.get(key, []):
            yield from _units(sub)


def _outside(spec: dict[str, Any]) -> list[str]:
    """Each value of an unclipped line, rule or rect layer that lies outside its scale's domain (none: the
    layer's marks lie in the plot); layers drawn with ``clip`` are skipped."""
    found = []
    for unit in _units(spec):
        mark = unit["mark"] if isinstance(unit["mark"], dict) else {"type": unit["mark"]}
        if mark["type"] not in ("line", "rule", "rect") or mark.get("clip"):
            continue
        enc = unit["encoding"]
        rows = spec["datasets"][unit["data"]["name"]]
        for channel, axis in _SPANNED.items():
            if channel not in enc:
                continue
            lo, hi = enc[axis]["scale"]["domain"]
            for row in rows:
                v = row[enc[channel]["field"]]
                if v is not None and not (lo * (1 - 1e-9) <= v <= hi * (1 + 1e-9)):
                    found.append(f"{unit['name']}.{channel} = {v} outside [{lo}, {hi}]")
    return found


def _clipped(spec: dict[str, Any]) -> set[str]:
    """The marks drawn with ``clip``."""
    return {u["mark"]["type"] for u in _units(spec) if isinstance(u["mark"], dict) and u["mark"].get("clip")}


@pytest.mark.parametrize("ceilings", ["default", "all", "datasheet"])
def test_roofline_roofs_lie_in_the_plot(fixture_store: Path, ceilings: str) -> None:
    store = Store(fixture_store)
    runs = sorted(p.name.split("=", 1)[1] for p in (fixture_store / "runs").iterdir() if "=" in p.name)
    drawn = 0
    for run in runs:
        try:
            view = roofline(store, run, "all", ceilings=ceilings)
        except RooflineDataError:
            continue
        for level in ("dram", "l2", "l1", "all"):
            try:
                spec = roofline_spec(view.points, view.ceilings, level=level, precision="all")
            except RooflineDataError:
                continue
            assert _outside(spec) == [], (run, level)
            assert _clipped(spec) == set(), (run, level)
            drawn += len(spec["datasets"]["rl_ceilings"])  # a run without this source's roofs draws none
    assert drawn >= 100


@pytest.mark.parametrize("golden", sorted(p.name for p in GOLDEN.glob("*.json")))
def test_time_based_lines_and_boxes_lie_in_the_plot(golden: str) -> None:
    spec = json.loads((GOLDEN / golden).read_text(encoding="utf-8"))
    lines = [k for k in spec["datasets"] if k.endswith("_lines")]
    assert lines and all(spec["datasets"][k] for k in lines)
    assert _outside(spec) == []
    assert _clipped(spec) == {"text"}  # only the labels


def test_the_check_sees_a_line_outside_the_plot() -> None:
    """The check above can fail: a roof point below the y range is found."""
    spec = json.loads((GOLDEN / "esmm-kernel-l2-default-cp.json").read_text(encoding="utf-8"))
    unit = next(u for u in _units(spec) if u.get("name") == "cp_lines")
    lo = unit["encoding"]["y"]["scale"]["domain"][0]
    spec["datasets"][unit["data"]["name"]][0]["y"] = lo / 10
    assert len(_outside(spec)) == 1
