"""``render.roofline.roofline_spec`` builds the roofline chart's Vega-Lite spec as a dict without Altair, and from
:class:`Rows` without polars (``render.rows``; issue 14: ``rl roofline RUN -o x.png``): it must be exactly what
Altair gives, the spec of ``roofline_chart`` (polars path) as ``spec_dict`` writes it, same keys in the same order,
on every fixture run, level, precision and ceiling source."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import altair as alt
import pytest

from rooflake.render import roofline_chart, spec_dict
from rooflake.render.roofline import roofline_spec
from rooflake.render.rows import SCHEMA_URL, THEME_CONFIG, drawing
from rooflake.schema import RooflineDataError
from rooflake.store import Store
from rooflake.views.roofline import roofline

CASES = [(lv, "all") for lv in ("dram", "l2", "l1", "all")] + [
    ("dram", p) for p in ("fp64", "fp32", "fp16", "tensor")
]


def _both(view: Any, level: str, precision: str, title: str | None) -> tuple[str, str]:
    """(Altair's spec, roofline_spec's) as JSON text, key order included; or both errors' text."""
    out = []
    for build in (lambda *a, **k: spec_dict(roofline_chart(*a, **k)), roofline_spec):
        try:
            out.append(
                json.dumps(build(view.points, view.ceilings, level=level, precision=precision, title=title))
            )
        except RooflineDataError as e:
            out.append(f"RooflineDataError: {e}")
    return out[0], out[1]


def test_constants_are_altairs() -> None:
    assert SCHEMA_URL == alt.SCHEMA_URL
    assert alt.theme.get()() == {"config": THEME_CONFIG}


@pytest.mark.parametrize("ceilings", ["default", "all", "datasheet"])
def test_spec_equals_altairs(fixture_store: Path, ceilings: str) -> None:
    """Every fixture run, on Arrow tables and on rows, each level with each kernel's precision and every precision
    at DRAM (default ceilings; overlays with ``all``; another source's roofs with ``datasheet``)."""
    store = Store(fixture_store)
    runs = sorted(p.name.split("=", 1)[1] for p in (fixture_store / "runs").iterdir() if "=" in p.name)
    compared, in_python = 0, 0
    for run in runs:
        for as_rows in (False, True) if ceilings == "default" else (False,):
            try:
                view = roofline(store, run, "all", ceilings=ceilings, as_rows=as_rows)
            except RooflineDataError:
                continue
            for i, (level, precision) in enumerate(CASES if ceilings == "default" else CASES[:4]):
                ours, altair = _both(view, level, precision, None if i % 2 else f"run {run} · T")
                assert ours == altair, (run, level, precision, as_rows)
                compared += not ours.startswith("RooflineDataError")
                in_python += drawing(view.points, view.ceilings, level, precision, None) is not None
    assert compared >= 10, compared
    assert in_python >= (20 if ceilings == "default" else 0), in_python  # the rows path drew most of them


@pytest.mark.parametrize("suffix", [".png", ".svg", ".html"])
def test_saved_file_equals_save_chart(fixture_store: Path, tmp_path: Path, suffix: str) -> None:
    """``save_roofline`` writes the bytes ``save_chart(roofline_chart(...))`` writes (PNG and SVG from the dict
    spec, HTML through Altair), for a run with zero-FLOP kernels below the chart and one without."""
    from rooflake.render import save_chart, zero_flop_table
    from rooflake.render.rows import save_roofline

    store = Store(fixture_store)
    runs = sorted(p.name.split("=", 1)[1] for p in (fixture_store / "runs").iterdir() if "=" in p.name)
    done = {True: 0, False: 0}
    for run in runs:
        try:
            v = roofline(store, run, "dram", as_rows=True)
            chart = roofline_chart(v.points, v.ceilings, title="T")
        except RooflineDataError:
            continue
        zero = zero_flop_table(v.points)
        if done[zero.height > 0]:
            continue
        done[zero.height > 0] += 1
        save_chart(chart, tmp_path / f"a{suffix}", below=zero)
        assert save_roofline(v.points, v.ceilings, tmp_path / f"b{suffix}", title="T") == zero.height
        a, b = ((tmp_path / f"{n}{suffix}").read_bytes() for n in "ab")
        if suffix == ".svg":  # vl-convert numbers clip paths on from the process's previous conversions
            a, b = (re.sub(rb"clip\d+", b"clip", x) for x in (a, b))
        assert a == b, run
    assert done == {True: 1, False: 1}


def test_rows_path_reads_the_columns_the_polars_path_reads() -> None:
    """render.rows' column lists are those of render.inputs and render.tables (the rows path fills the same
    optional columns and writes the points' columns in the same order)."""
    from rooflake.render import inputs, rows, tables

    assert set(rows.POINT_COLUMNS) == set(inputs.POINT_REQUIRED) | set(inputs.POINT_OPTIONAL)
    assert rows._REQUIRED == inputs.POINT_REQUIRED
    assert set(rows.CEILING_COLUMNS) == set(inputs.CEILING_REQUIRED) | set(inputs.CEILING_OPTIONAL)
    assert list(rows.LONG_COLUMNS) == list(tables._LONG_COLUMNS)
    assert (rows.LEVELS, rows.PRECISIONS) == (
        ("dram", "l2", "l1", "all"),
        ("fp64", "fp32", "fp16", "tensor", "all"),
    )
