"""The roofline chart without polars or Altair: its drawing from :class:`rooflake.schema.duck.Rows` and its Vega-Lite
dicts (``rl roofline RUN -o x.png`` imports neither: they cost 0.1 s and 0.2 s of CPU of a 0.9 s command).

:func:`drawing` does in Python what :mod:`rooflake.render.roofline`'s polars path does with frames (rows selected,
one point per kernel x level, the roofs picked and sampled, their labels, the subtitle) for the common case: one
run's ``kernel_roofline`` rows against its own roofs (no overlaid source), every kernel with FLOPs somewhere and some
point drawn; any other input is left to the polars path. :func:`spec` turns a :class:`Drawing` of either path into the
spec Altair's ``to_dict`` gives of :func:`rooflake.render.roofline_chart`, the same keys in the same order.
tests/test_png_spec.py checks both, JSON text against JSON text, on every fixture run, level and precision.

The roof geometry (:func:`ceiling_line_rows`, :func:`ceiling_text_rows`, :func:`roof_parts`) and the names and
styles of roofs (:func:`ceiling_label`, :func:`ceiling_style`, :func:`tensor_family`) live here and are what
:mod:`rooflake.render.roofs` uses too. Formulas: :mod:`rooflake.render.roofs` (Williams et al. 2009, Yang et al. 2020).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Literal, NamedTuple

from rooflake.render.axes import (
    ai_x_spec,
    decades,
    flops_y_spec,
    roofline_ai_range,
    roofline_y_range,
    slope_angle,
)
from rooflake.render.formats import ChartTitle, si, truncate_text
from rooflake.render.marks import LEVEL_LABEL, LEVEL_ORDER, LEVEL_SHAPE, flag_outline_spec, level_shape_spec
from rooflake.schema.duck import Rows

__all__ = [
    "BANDWIDTH_COLOR",
    "LINE_COLUMNS",
    "LONG_COLUMNS",
    "PRECISION_CEILINGS",
    "SCHEMA_URL",
    "TEXT_COLUMNS",
    "THEME_CONFIG",
    "Drawing",
    "ceiling_label",
    "ceiling_line_rows",
    "ceiling_style",
    "ceiling_text_rows",
    "drawing",
    "layer_spec",
    "mark_spec",
    "roof_layers_spec",
    "roof_name",
    "roof_parts",
    "save_roofline",
    "spec",
    "tensor_family",
]

#: Compute ceilings of each precision when the points do not name theirs (time-based charts, trajectories): the
#: first one present wins. Tensor: the fastest dense FP16 Tensor-Core roof (:func:`tensor_family`: ``TENSOR
#: FP16→FP32``, ``TENSOR FP16 HGMMA``, the datasheet's ``TENSOR FP16``), else a ceiling named ``TENSOR``.
PRECISION_CEILINGS: dict[str, tuple[str, ...]] = {
    "fp64": ("FP64",),
    "fp32": ("FP32",),
    "fp16": ("FP16",),
    "tensor": ("TENSOR FP16", "TENSOR"),
}
#: Bandwidth roofs in greys (kernels are in colour), darker the farther from the SM.
BANDWIDTH_COLOR = {"L1": "#aaaaaa", "L2": "#666666", "DRAM": "#111111"}
#: Columns of a sampled roof line (:func:`ceiling_line_rows`) and their Python types (``list``: of int).
LINE_COLUMNS: dict[str, type] = {
    **{c: str for c in ("label", "ceiling", "kind")},
    **{c: float for c in ("value", "value_min", "value_max", "clock_hz")},
    **{c: str for c in ("source", "formula")},
    **{c: int for c in ("n_kernels", "n_invalid", "order")},
    **{c: float for c in ("ai", "flops_per_s")},
    "color": str,
    "dash": list,
}
#: Columns of a roof's label (:func:`ceiling_text_rows`).
TEXT_COLUMNS: dict[str, type] = {
    "order": int,
    "text": str,
    "ai": float,
    "flops_per_s": float,
    "angle": float,
    "align": str,
}
#: Columns of a drawn point (one per kernel x level; ``rooflake.render.tables.level_points``); None: as given.
LONG_COLUMNS: dict[str, type | None] = {
    "run_id": str,
    "kernel_id": int,
    "name": None,
    "kernel": None,
    **{c: str for c in ("short_name", "nvtx_path", "precision")},
    "level": None,
    **{c: float for c in ("ai", "achieved_flops_per_s", "attainable_level", "attainable_flops_per_s")},
    "fraction_of_roof": float,
    "bound": str,
    **{c: float for c in ("duration_ns", "flops", "bytes_level")},
    **{c: None for c in ("above_roof", "flags", "flagged")},
}
#: What Altair puts into every spec it writes: ``alt.SCHEMA_URL`` of the installed Altair and its default theme's
#: ``config`` (tests/test_png_spec.py checks both against Altair's).
SCHEMA_URL = "https://vega.github.io/schema/vega-lite/v6.4.1.json"
THEME_CONFIG: dict[str, Any] = {"view": {"continuousWidth": 300, "continuousHeight": 300}}
WIDTH, HEIGHT = 640, 420
TEXT_STYLE: dict[str, Any] = {"baseline": "bottom", "dy": -3, "fontSize": 11, "color": "#333333"}
#: Columns of ``kernel_roofline`` that the roofline chart needs.
POINT_REQUIRED = ("run_id", "kernel_id", "name", "precision", "duration_ns", "flops", "achieved_flops_per_s")
#: Its display-only columns (nulls when absent), with their DuckDB types as the query's ``-- Columns:`` block
#: declares them (tests/test_query_columns.py holds the two equal); ``rooflake.render.inputs.POINT_OPTIONAL`` is
#: this with polars types. ``peak_ceiling`` names the row's compute roof and ``peak_flops_per_s`` is its value.
POINT_OPTIONAL_TYPES: dict[str, str] = {
    **{c: "VARCHAR" for c in ("short_name", "nvtx_path")},
    **{c: "BOOLEAN" for c in ("is_dominant", "zero_flops")},
    **{c: "DOUBLE" for c in ("attainable_flops_per_s", "fraction_of_roof")},
    "bound": "VARCHAR",
    "above_roof": "BOOLEAN",
    "flags": "VARCHAR[]",
    "peak_ceiling": "VARCHAR",
    "peak_flops_per_s": "DOUBLE",
    **{f"{q}_{lv}": "DOUBLE" for q in ("bytes", "attainable") for lv in LEVEL_ORDER},
}
#: Every column of ``kernel_roofline`` the chart reads
POINT_COLUMNS = (*POINT_REQUIRED, *POINT_OPTIONAL_TYPES)
#: Columns of ``run_ceilings`` a chart reads (rooflake.render.inputs' CEILING_REQUIRED and CEILING_OPTIONAL)
CEILING_COLUMNS = (
    *("ceiling", "kind", "value", "run_id", "machine_key", "value_min", "value_max", "clock_hz", "unit"),
    *("formula", "source", "n_kernels", "n_invalid", "label"),
)


class Drawing(NamedTuple):
    """What a roofline chart draws, before it is an Altair chart or a dict: the points (``long``, one row per
    kernel x level, :data:`LONG_COLUMNS`), the axes' ranges (FLOP/byte, FLOP/s), the roof lines
    (:data:`LINE_COLUMNS`) and their labels (:data:`TEXT_COLUMNS`), as lists of dicts, and the title lines."""

    long: list[dict[str, Any]]
    level_text: str
    multi: bool
    x: tuple[float, float]
    y: tuple[float, float]
    lines: list[dict[str, Any]]
    texts: list[dict[str, Any]]
    title: str | list[str]
    subtitle: list[str]
    #: what one point is: kernel, or layer (an NVTX layer's roofline)
    noun: str = "kernel"


def roof_name(row: dict[str, Any]) -> str:
    """The name a roof is drawn with: the row's ``label`` where the query gives one, else its ``ceiling``."""
    return str(row.get("label") or row["ceiling"])


def ceiling_label(row: dict[str, Any]) -> str:
    """Legend text of a ceiling row: name, value with SI prefix, source (its ``source_label`` where the rows give
    one, else ``source``: ``DRAM 2.04 TB/s (ncu-report)``, ``FP32 19.5 TFLOP/s (datasheet, boost clock 1.41
    GHz)``)."""
    unit = "B/s" if row["kind"] == "bandwidth" else "FLOP/s"
    named = row.get("source_label") or row.get("source")
    source = f" ({named})" if named else ""
    return f"{roof_name(row)} {si(float(row['value']), unit)}{source}"


def ceiling_style(ceiling: str, kind: str, top: bool) -> tuple[str, list[int]]:
    """(colour, dash) of a roof: bandwidth roofs solid, darker the farther out; the top compute roof solid."""
    if kind == "bandwidth":
        return BANDWIDTH_COLOR.get(ceiling, "#777777"), [1, 0]
    return ("#111111", [1, 0]) if top else ("#555555", [6, 3])


def tensor_family(name: str) -> str | None:
    """The source-type key of a Tensor-Core ceiling name (``TENSOR FP16→FP32``, ``TENSOR FP16 HGMMA`` and ``TENSOR
    FP16`` -> ``TENSOR FP16``), as ``ceilings_side_by_side`` pairs them; None for another name or a sparse roof."""
    if not name.startswith("TENSOR ") or name.endswith(" SPARSE"):
        return None
    return "TENSOR " + name[7:].split(" ")[0].split("→")[0]


def _cast(row: dict[str, Any], columns: dict[str, Any]) -> dict[str, Any]:
    """``row`` reduced to ``columns`` in their order, each value of type float or int converted (None kept): what a
    polars frame of those column types gives back."""
    out = {}
    for c, kind in columns.items():
        v = row.get(c)
        out[c] = kind(v) if v is not None and kind in (float, int) else v
    return out


def _sampled(row: dict[str, Any], order: int, xs: set[float], y: Any, top: bool) -> list[dict[str, Any]]:
    """Rows of one roof: the ceiling row with its label, order and style, at each x of ``xs`` (y = ``y(x)``)."""
    color, dash = ceiling_style(row["ceiling"], row["kind"], top)
    base = {**row, "label": ceiling_label(row), "order": order, "color": color, "dash": dash}
    return [{**base, "ai": x, "flops_per_s": y(x)} for x in sorted(xs)]


def ceiling_line_rows(
    bw: list[dict[str, Any]], comp: list[dict[str, Any]], x_lo: float, x_hi: float
) -> list[dict[str, Any]]:
    """Sampled (ai, flops_per_s) rows of every roof line, one ``order`` per roof (columns :data:`LINE_COLUMNS`).

    Bandwidth roof of level l: y = W_l * x up to its ridge with the top compute roof P (so y = min(W_l * x, P)
    where drawn); compute roof P_p: y = P_p from its ridge with the widest bandwidth roof drawn to the right edge.
    ``bw``/``comp``: ceiling rows (``ceiling``, ``kind``, ``value`` in byte/s or FLOP/s, ...)."""
    p_max = max(float(r["value"]) for r in comp) if comp else None
    w_max = max(float(r["value"]) for r in bw) if bw else None
    grid = decades(x_lo, x_hi)
    rows: list[dict[str, Any]] = []
    order = 0
    for row in bw:
        w = float(row["value"])
        end = x_hi if p_max is None else min(max(p_max / w, x_lo), x_hi)

        def sloped(x: float, w: float = w) -> float:
            return w * x if p_max is None else min(w * x, p_max)

        rows += _sampled(row, order, {x_lo, end, *(g for g in grid if g < end)}, sloped, False)
        order += 1
    for row in comp:
        p = float(row["value"])
        start = x_lo if w_max is None else min(max(p / w_max, x_lo), x_hi)
        xs = {start, x_hi, *(g for g in grid if g > start)}
        rows += _sampled(row, order, xs, lambda _x, p=p: p, p == p_max)
        order += 1
    return [_cast(r, LINE_COLUMNS) for r in rows]


def ceiling_text_rows(
    lines: list[dict[str, Any]], x: tuple[float, float], y: tuple[float, float], width: int, height: int
) -> list[dict[str, Any]]:
    """One label per roof of ``lines`` (:func:`ceiling_line_rows`), placed on the line (columns
    :data:`TEXT_COLUMNS`): bandwidth roofs near the left edge, rotated by ``angle`` (degrees, Vega convention) to
    follow the slope of y = W * x on the log-log plot; compute roofs at the right edge (``align`` right)."""
    x_dec = math.log10(x[1] / x[0])
    angle = -slope_angle(x, y, width, height)
    groups: dict[int, list[dict[str, Any]]] = {}
    for r in lines:
        groups.setdefault(r["order"], []).append(r)
    out: list[dict[str, Any]] = []
    for order, grp in groups.items():
        first = grp[0]
        text = first["label"].rsplit(" (", 1)[0]  # the legend carries the source
        if first["kind"] != "bandwidth":
            out.append({"order": order, "text": text, "ai": x[1], "flops_per_s": float(first["value"]),
                        "angle": 0.0, "align": "right"})  # fmt: skip
            continue
        end = max(float(r["ai"]) for r in grp)
        ax = min(x[0] * 10 ** (0.04 * x_dec), math.sqrt(x[0] * end))
        w = float(first["value"])
        ay = w * ax
        if ay < y[0]:  # the roof enters the plot above its left edge: start where it does
            ax, ay = y[0] / w * 10 ** (0.04 * x_dec), y[0] * 10 ** (0.04 * x_dec)
        out.append(
            {"order": order, "text": text, "ai": ax, "flops_per_s": ay, "angle": angle, "align": "left"}
        )
    return [_cast(r, TEXT_COLUMNS) for r in out]


def roof_parts(
    lines: list[dict[str, Any]], texts: list[dict[str, Any]]
) -> tuple[dict[str, list[Any]], float, dict[str, Any]]:
    """What the roof layers draw: the legend's scales (``domain`` the labels, ``color``, ``dash``, one per label in
    order), the angle of the bandwidth labels (degrees, Vega's clockwise) and the datasets ``rl_ceilings`` (lines
    without colour and dash), ``rl_ceiling_labels_bandwidth`` and ``_compute``."""
    first: dict[str, dict[str, Any]] = {}
    for r in lines:
        first.setdefault(r["label"], r)
    scales = {
        "domain": list(first),
        "color": [r["color"] for r in first.values()],
        "dash": [r["dash"] for r in first.values()],
    }
    bw_text = [t for t in texts if t["align"] == "left"]
    comp_text = [t for t in texts if t["align"] == "right"]
    angle = float(bw_text[0]["angle"] if bw_text else 0.0) % 360
    datasets = {
        "rl_ceilings": [{k: v for k, v in r.items() if k not in ("color", "dash")} for r in lines],
        "rl_ceiling_labels_bandwidth": bw_text,
        "rl_ceiling_labels_compute": comp_text,
    }
    return scales, angle, datasets


def mark_spec(kind: str, **props: Any) -> dict[str, Any]:
    """A mark as the Vega-Lite dict Altair's ``to_dict`` gives of ``mark_<kind>(**props)``: ``type`` first, the
    properties in name order."""
    return {"type": kind, **dict(sorted(props.items()))}


def layer_spec(data: str, mark: dict[str, Any], encoding: dict[str, Any], name: str) -> dict[str, Any]:
    """One layer as Altair's ``to_dict`` gives ``alt.Chart(alt.NamedData(name=data), name=name).mark_*(...)
    .encode(...)``: the channels in name order."""
    return {"data": {"name": data}, "mark": mark, "encoding": dict(sorted(encoding.items())), "name": name}


def roof_layers_spec(
    parts: tuple[dict[str, list[Any]], float, dict[str, Any]],
    x_enc: dict[str, Any],
    y_enc: dict[str, Any],
    tooltip: list[dict[str, Any]],
    legend: dict[str, Any],
    clip: bool = True,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``rooflake.render.roofs.roof_layers`` as the Vega-Lite dicts Altair's ``to_dict`` gives of them, and the same
    datasets, built without Altair (``parts``: :func:`roof_parts`; ``x_enc``, ``y_enc``:
    :func:`rooflake.render.axes.ai_x_spec`, ``flops_y_spec``; ``tooltip`` and ``legend`` as dicts).

    ``clip`` (Vega-Lite's mark ``clip`` on the lines) is for a y range that need not cover them (the trajectory's).
    The roofline's covers every line's points (:func:`rooflake.render.axes.roofline_y_range` of them) and passes
    False: vega writes a clip path around each roof's line, and vl-convert's PNG (resvg) draws each clipped group
    through a mask of the whole canvas (a time-based roofline's PNG took 0.16 s with its 17 clip paths, 0.05 s
    without them)."""
    scales, angle, datasets = parts
    label = {"field": "label"}
    roof: dict[str, Any] = {
        "color": {**label, "legend": legend, "scale": {"domain": scales["domain"], "range": scales["color"]}},
        "strokeDash": {**label, "scale": {"domain": scales["domain"], "range": scales["dash"]}},
    }
    roof = {k: {**v, "title": "Ceilings", "type": "nominal"} for k, v in roof.items()}
    roof |= {
        "detail": {"field": "order", "type": "ordinal"},
        "order": {"field": "ai", "type": "quantitative"},
    }
    roof |= {"tooltip": tooltip, "x": x_enc, "y": y_enc}
    text = {"text": {"field": "text", "type": "nominal"}, "x": x_enc, "y": y_enc}
    bw_mark = mark_spec("text", align="left", angle=angle, **TEXT_STYLE)
    comp_mark = mark_spec("text", align="right", dx=-4, **TEXT_STYLE)
    layers = [
        layer_spec("rl_ceilings", mark_spec("line", strokeWidth=2, clip=clip), roof, "ceilings"),
        layer_spec("rl_ceiling_labels_bandwidth", bw_mark, text, "ceiling_labels_bandwidth"),
        layer_spec("rl_ceiling_labels_compute", comp_mark, text, "ceiling_labels_compute"),
    ]
    return layers, datasets


_TYPES = {"N": "nominal", "Q": "quantitative", "O": "ordinal"}
#: tooltips as (field:type, title, d3 format or None)
ROOF_TOOLTIP = [
    ("label:N", "ceiling", None),
    ("formula:N", "formula", None),
    ("value_min:Q", "min over launches", ".3~s"),
    ("value_max:Q", "max over launches", ".3~s"),
    ("n_kernels:Q", "launches with a valid peak", None),
    ("n_invalid:Q", "launches with NaN/0 peak", None),
]
POINT_TOOLTIP = [
    ("name:N", "kernel", None),
    ("short_name:N", "short name", None),
    ("nvtx_path:N", "NVTX", None),
    ("precision:N", "precision", None),
    ("level:N", "level", None),
    ("ai:Q", "AI (FLOP/byte)", ".4~g"),
    ("achieved_flops_per_s:Q", "achieved (FLOP/s)", ".4~s"),
    ("attainable_level:Q", "attainable at level (FLOP/s)", ".4~s"),
    ("attainable_flops_per_s:Q", "attainable (FLOP/s)", ".4~s"),
    ("fraction_of_roof:Q", "fraction of roof", ".1%"),
    ("bound:N", "bound", None),
    ("duration_ns:Q", "duration (ns)", ",.0f"),
    ("flags:N", "flags", None),
    ("run_id:N", "run", None),
    ("kernel_id:Q", "kernel id", None),
]
ROOF_LEGEND: dict[str, Any] = {
    "orient": "right",
    "labelLimit": 320,
    "symbolType": "stroke",
    "symbolStrokeWidth": 2,
}
KERNEL_LEGEND: dict[str, Any] = {"orient": "right", "labelLimit": 260, "symbolLimit": 20}
POINT_MARK: dict[str, Any] = {"filled": True, "size": 110, "opacity": 0.9, "shape": "circle"}
LINK_MARK: dict[str, Any] = {"strokeWidth": 1, "opacity": 0.5, "color": "#888888"}
RESOLVE = {"color": "independent", "shape": "independent", "strokeDash": "independent"}


def tooltips_spec(tips: list[tuple[str, str, str | None]]) -> list[dict[str, Any]]:
    """Tooltips as the dicts Altair's ``to_dict`` gives of ``alt.Tooltip(field, title=..., format=...)``."""
    out = []
    for f, t, fmt in tips:
        field, kind = f.rsplit(":", 1)
        out.append({"field": field, **({"format": fmt} if fmt else {}), "title": t, "type": _TYPES[kind]})
    return out


def scheme(long: list[dict[str, Any]]) -> Literal["tableau10", "tableau20"]:
    """The kernels' colour scheme: tableau10 for up to 10 kernels, else tableau20."""
    return "tableau10" if len({r["kernel"] for r in long}) <= 10 else "tableau20"


def spec(d: Drawing) -> dict[str, Any]:
    """The Vega-Lite spec of the roofline chart of ``d``: what ``spec_dict(roofline_chart(...))`` gives (Altair's
    default theme's config, :data:`SCHEMA_URL`), keys in the same order, built without Altair."""
    x_enc = ai_x_spec(d.level_text, *d.x)
    legend = dict(sorted(ROOF_LEGEND.items()))
    parts = roof_parts(d.lines, d.texts)
    tips = tooltips_spec(ROOF_TOOLTIP)
    layers, datasets = roof_layers_spec(
        parts, x_enc, flops_y_spec("flops_per_s", *d.y), tips, legend, clip=False
    )
    y_enc = flops_y_spec("achieved_flops_per_s", *d.y)
    if d.multi:
        detail = [{"field": "run_id", "type": "nominal"}, {"field": "kernel_id", "type": "quantitative"}]
        links = {"x": x_enc, "y": y_enc, "detail": detail, "order": {"field": "ai", "type": "quantitative"}}
        layers.append(layer_spec("rl_points", mark_spec("line", **LINK_MARK), links, "links"))
    color = {"field": "kernel", "legend": dict(sorted(KERNEL_LEGEND.items()))}
    color |= {"scale": {"scheme": scheme(d.long)}, "title": d.noun.capitalize(), "type": "nominal"}
    point_enc = {"x": x_enc, "y": y_enc, "color": color, **flag_outline_spec()}
    point_enc["tooltip"] = tooltips_spec(POINT_TOOLTIP)
    if d.multi:
        point_enc["shape"] = level_shape_spec({"orient": "right"})
    layers.append(layer_spec("rl_points", mark_spec("point", **POINT_MARK), point_enc, "points"))
    return {
        "config": {k: dict(v) for k, v in THEME_CONFIG.items()},  # a copy: callers may change the spec
        "layer": layers,
        "resolve": {"scale": RESOLVE},
        "width": WIDTH,
        "height": HEIGHT,
        "title": {"text": d.title, "anchor": "start", "subtitle": d.subtitle, "subtitleColor": "#555555"},
        "datasets": {**datasets, "rl_points": d.long},
        "$schema": SCHEMA_URL,
    }


def level_text(level: str) -> str:
    """The memory level(s) of ``level`` (dram | l2 | l1 | all) as a chart names them: ``DRAM``, ``L1, L2 and DRAM``."""
    return "L1, L2 and DRAM" if level == "all" else LEVEL_LABEL[level]


def prec_text(precision: str, noun: str = "kernel") -> str:
    """``precision`` (fp64 | fp32 | fp16 | tensor | all) as the subtitle names it (``noun``: what one point is)."""
    return f"each {noun}'s dominant precision" if precision == "all" else precision


def _positive(v: Any) -> bool:
    """A number > 0 (None, NaN made None, 0 and negatives are not)."""
    return v is not None and v > 0


def _dicts(rows: Rows, columns: tuple[str, ...]) -> list[dict[str, Any]] | None:
    """``rows`` as dicts, float NaN as None, absent ``columns`` as None (what ``inputs.conform`` does to a frame);
    None when a column is not one the rows path knows to read as that frame does."""
    names = list(rows.names)
    floats = [i for i, t in enumerate(rows.types) if str(t) in ("DOUBLE", "FLOAT")]
    if len(set(names)) != len(names):
        return None
    extra = {c: None for c in columns if c not in names}
    out = []
    for r in rows.rows:
        row = dict(zip(names, r, strict=True))
        for i in floats:
            v = r[i]
            if v is not None and math.isnan(v):
                row[names[i]] = None
        out.append(row | extra)
    return out


def _has_flops(r: dict[str, Any]) -> bool:
    return _positive(r["flops"]) and not r["zero_flops"]


def _has_time(r: dict[str, Any]) -> bool:
    return _positive(r["achieved_flops_per_s"]) and _positive(r["duration_ns"])


#: ``level`` and ``precision`` arguments of the roofline chart (``all``: the three levels; each kernel's dominant one)
LEVELS = ("dram", "l2", "l1", "all")
PRECISIONS = ("fp64", "fp32", "fp16", "tensor", "all")
_REQUIRED = ("run_id", "kernel_id", "name", "precision", "duration_ns", "flops", "achieved_flops_per_s")


def _median(values: list[float]) -> float:
    """polars' median: the middle value, or between the two middle ones by linear interpolation (lo + (hi-lo)/2)."""
    s = sorted(values)
    n = len(s)
    if n % 2:
        return s[n // 2]
    lo, hi = s[n // 2 - 1], s[n // 2]
    return lo if lo == hi else (hi - lo) * 0.5 + lo


def _cut(name: Any, n: int = 80) -> Any:
    return None if name is None else truncate_text(str(name), n)


def _level_points(
    rows: list[dict[str, Any]], levels: list[str]
) -> tuple[list[dict[str, Any]], list[tuple[str, int, str]]]:
    """``rooflake.render.tables.level_points`` of dict rows: the drawable (kernel, level) points (columns
    :data:`LONG_COLUMNS`, DRAM first) and the reasons ``(what, n_rows, text)`` the others are not drawn."""
    reasons: list[tuple[str, int, str]] = []
    n_no_flops = sum(not _has_flops(r) for r in rows)
    n_no_time = sum(_has_flops(r) and not _has_time(r) for r in rows)
    if n_no_flops:
        reasons.append(("flops", n_no_flops, "have no FLOPs (zero or not counted)"))
    if n_no_time:
        reasons.append(("time", n_no_time, "have no usable duration (NaN, missing or 0)"))
    base = [
        r | {"name": _cut(r["name"]), "kernel": r["short_name"] if r["short_name"] is not None else _cut(r["name"], 40),
             "flags": ", ".join(r["flags"] or [])}
        for r in rows
        if _has_flops(r) and _has_time(r)
    ]  # fmt: skip
    long: list[dict[str, Any]] = []
    for lv in sorted(levels, key=lambda lv: -LEVEL_ORDER.index(lv)):
        ok = [r for r in base if _positive(r[f"ai_{lv}"])]
        left = [r for r in base if not _positive(r[f"ai_{lv}"])]
        if left:
            n, no_counter = len(left), sum(r[f"bytes_{lv}"] is None for r in left)
            what = f"have no {LEVEL_LABEL[lv]} bytes"
            what += " (counter missing)" if no_counter == n else " (0 bytes)" if no_counter == 0 else ""
            reasons.append((LEVEL_LABEL[lv], n, what))
        long += [r | {"level": LEVEL_LABEL[lv], "ai": r[f"ai_{lv}"], "bytes_level": r[f"bytes_{lv}"],
                      "attainable_level": r[f"attainable_{lv}"]} for r in ok]  # fmt: skip
    for r in long:
        r["above_roof"] = bool(r["above_roof"])
        r["flagged"] = r["above_roof"] or r["flags"] != ""
    return [_cast(r, LONG_COLUMNS) for r in long], reasons


def _wanted(with_flops: list[dict[str, Any]], precisions: list[str]) -> list[tuple[str, ...]]:
    """``rooflake.render.roofs.wanted_compute`` of dict rows."""
    out: list[tuple[str, ...]] = []
    for p in precisions:
        named = dict.fromkeys(r["peak_ceiling"] for r in with_flops if r["precision"] == p)
        named.pop(None, None)
        out += [(n,) for n in named] if named else [PRECISION_CEILINGS.get(p, (p.upper(),))]
    return out


def _point_roofs(with_flops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rooflake.render.roofs.point_roofs`` of dict rows (the median of each named roof's peak_flops_per_s)."""
    groups: dict[str, list[float]] = {}
    for r in with_flops:
        if r["peak_ceiling"] is not None and _positive(r["peak_flops_per_s"]):
            groups.setdefault(r["peak_ceiling"], []).append(float(r["peak_flops_per_s"]))
    formula = "peak_flops_per_s of the kernels (median)"
    return [{"ceiling": c, "kind": "compute", "value": _median(v), "formula": formula, "n_kernels": len(v)}
            for c, v in groups.items()]  # fmt: skip


def _label(r: dict[str, Any]) -> Any:
    return r["label"] if r["label"] is not None else r["ceiling"]


def _family_hit(valid: list[dict[str, Any]], name: str) -> str | None:
    family = tensor_family(name)
    if family is None:
        return None
    comp = sorted((r for r in valid if r["kind"] == "compute"), key=lambda r: -r["value"])
    return next((str(r["ceiling"]) for r in comp if tensor_family(r["ceiling"]) == family), None)


def _firsts(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    first: dict[Any, dict[str, Any]] = {}
    for r in rows:
        first.setdefault(r["ceiling"], r)
    return list(first.values())


def _pick(
    ceil: list[dict[str, Any]], levels: list[str], compute: list[tuple[str, ...]], extra: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """``rooflake.render.roofs.pick_ceilings`` of dict rows: (bandwidth rows, compute rows, missing names)."""
    valid = [r for r in ceil if _positive(r["value"])]
    have = {r["ceiling"] for r in valid} | {_label(r) for r in valid}
    have_extra = {r["ceiling"] for r in extra}
    bw_names = [LEVEL_LABEL[lv] for lv in levels]
    missing = [n for n in bw_names if n not in have]
    names: list[str] = []
    for options in compute:
        hit = next(
            (h for n in options if (h := n if n in have | have_extra else _family_hit(valid, n))), None
        )
        if hit is None:
            missing.append("/".join(options))
        elif hit not in names:
            names.append(hit)
    bw = [r for r in valid if r["ceiling"] in bw_names and r["kind"] == "bandwidth"]
    comp = [r for r in valid if (r["ceiling"] in names or _label(r) in names) and r["kind"] == "compute"]
    found = {r["ceiling"] for r in comp} | {_label(r) for r in comp}
    comp += [r for r in extra if r["ceiling"] in names and r["ceiling"] not in found]
    rank = {"L1": 0, "L2": 1, "DRAM": 2}
    bw = sorted(_firsts(bw), key=lambda r: rank.get(r["ceiling"], 3))
    return bw, sorted(_firsts(comp), key=lambda r: -r["value"]), missing


def _keys(rows: list[dict[str, Any]]) -> set[tuple[Any, Any]]:
    return {(r["run_id"], r["kernel_id"]) for r in rows}


def _subtitle(
    pts: list[dict[str, Any]],
    with_flops: list[dict[str, Any]],
    long: list[dict[str, Any]],
    reasons: list[tuple[str, int, str]],
    level: str,
    precision: str,
) -> list[str]:
    """The roofline chart's subtitle (``rooflake.render.roofline._subtitle``) when every kernel has FLOPs."""
    no_prec_flops = _keys(pts) - _keys(with_flops)
    subtitle = [f"{level_text(level)} roofline, {prec_text(precision)}: {len(_keys(long))} kernel(s) drawn"]
    not_drawn = [f"{len(no_prec_flops)} kernel(s) have no {precision} FLOPs"] if no_prec_flops else []
    not_drawn += [f"{n} kernel(s) {text}" for what, n, text in reasons if what == "time"]
    if not_drawn:
        subtitle.append("Not drawn: " + "; ".join(not_drawn))
    for what, n, text in reasons:
        if what in LEVEL_SHAPE:
            subtitle.append(
                f"{'No ' + what + ' point' if level == 'all' else 'Not drawn'}: {n} kernel(s) {text}"
            )
    n_flagged = len(_keys([r for r in long if r["flagged"]]))
    if n_flagged:
        subtitle.append(f"Red outline: above its roof or flagged by ingest ({n_flagged} kernel(s))")
    return subtitle


def _inputs(
    points: Any, ceilings: Any, level: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
    """The points and ceilings as dict rows as the polars path conforms them, or None where :func:`drawing` leaves
    them to it: not :class:`Rows`, a column missing or of another kind, ceilings of several runs or overlaid, a
    kernel without FLOPs (the chart then has a zero-FLOP table)."""
    if not isinstance(points, Rows) or not isinstance(ceilings, Rows):
        return None
    kinds = dict(zip(points.names, map(str, points.types), strict=True))
    levels = list(LEVEL_ORDER) if level == "all" else [level]
    needed = (*_REQUIRED, *(f"ai_{lv}" for lv in levels))
    if any(c not in kinds for c in needed) or kinds.get("flags", "VARCHAR[]") != "VARCHAR[]":
        return None
    pts, ceil = _dicts(points, POINT_COLUMNS), _dicts(ceilings, CEILING_COLUMNS)
    if pts is None or ceil is None or any(c not in ceilings.names for c in ("ceiling", "kind", "value")):
        return None
    if len({r["run_id"] for r in ceil} - {None}) > 1 or any(r.get("overlay") for r in ceil):
        return None
    with_any = {(r["run_id"], r["kernel_id"]) for r in pts if _positive(r["flops"])}
    return (pts, ceil) if _keys(pts) <= with_any else None


def drawing(points: Any, ceilings: Any, level: str, precision: str, title: ChartTitle) -> Drawing | None:
    """What the roofline chart of ``points`` (``kernel_roofline`` :class:`Rows`) under ``ceilings``
    (``run_ceilings``-shaped :class:`Rows` of one run, e.g. step ``own_run_ceilings``) draws at ``level`` and
    ``precision`` (as :func:`rooflake.render.roofline_chart` takes them), computed in Python: the
    :class:`Drawing` the polars path computes. None where the polars path must draw it (see :func:`_inputs`, an
    unknown level or precision, no point to draw: it raises the errors)."""
    if level not in LEVELS or precision not in PRECISIONS:
        return None
    given = _inputs(points, ceilings, level)
    if given is None:
        return None
    pts, ceil = given
    levels = list(LEVEL_ORDER) if level == "all" else [level]
    rows = [r for r in pts if (r["is_dominant"] if precision == "all" else r["precision"] == precision)]
    long, reasons = _level_points(rows, levels)
    if not long:
        return None
    with_flops = [r for r in rows if _has_flops(r)]
    known = list(PRECISION_CEILINGS)
    found = {r["precision"] for r in long}
    drawn = sorted(found, key=lambda p: (known.index(p) if p in known else len(known), p))
    wanted = _wanted(with_flops, [precision] if precision != "all" else drawn)
    bw, comp, missing = _pick(
        ceil, levels, wanted, [r for r in _point_roofs(with_flops) if _positive(r["value"])]
    )
    ridges = [float(p["value"]) / float(w["value"]) for p in comp for w in bw]
    x = roofline_ai_range([r["ai"] for r in long], ridges)
    lines = ceiling_line_rows(bw, comp, *x)
    y = roofline_y_range([r["flops_per_s"] for r in lines] + [r["achieved_flops_per_s"] for r in long])
    subtitle = _subtitle(pts, with_flops, long, reasons, level, precision)
    if missing:
        subtitle.append("No valid ceiling in this run for: " + ", ".join(missing))
    own = list(dict.fromkeys(r["source"] for r in ceil if r["source"] is not None))
    subtitle += [f"Roofs: {', '.join(own)}"] if own else []
    if title is None:
        keys = {r["machine_key"] for r in ceil} - {None}
        title = "Hierarchical roofline" + (f" · {next(iter(keys))}" if len(keys) == 1 else "")
    texts = ceiling_text_rows(lines, x, y, WIDTH, HEIGHT)
    return Drawing(long, level_text(level), level == "all", x, y, lines, texts, title, subtitle)


def save_roofline(
    points: Any,
    ceilings: Any,
    path: str | os.PathLike[str],
    *,
    level: str = "dram",
    precision: str = "all",
    title: ChartTitle = None,
    noun: str = "kernel",
) -> int:
    """Draw the roofline chart of ``points`` under ``ceilings`` and write it to ``path``: what
    ``save_chart(roofline_chart(points, ceilings, ...), path, below=zero_flop_table(points))`` writes
    (:func:`rooflake.render.save.save_chart`: the format by the suffix, the zero-FLOP kernels below the chart,
    the errors). A PNG (scale 2) or SVG that :func:`drawing` can draw (:class:`Rows`, no zero-FLOP kernel) is
    rendered from :func:`spec`, the same spec, importing neither polars nor Altair (their imports cost 0.1 s and 0.2 s of CPU; tests/test_png_spec.py
    compares the files; ``noun`` other than ``kernel``, what one point is, e.g. ``layer``: the polars path). Returns
    the number of zero-FLOP kernels listed below the chart. Raises as
    ``roofline_chart`` and ``save_chart``."""
    fmt = {".png": "png", ".svg": "svg"}.get(Path(path).suffix.lower())
    d = drawing(points, ceilings, level, precision, title) if fmt and noun == "kernel" else None
    if d is not None:
        from rooflake.render import engine

        spec_json = json.dumps(spec(d), allow_nan=False)  # as save_chart dumps it
        scale = 2.0 if fmt == "png" else 1.0  # save_chart's scales
        engine.submit(engine.render_files, spec_json, [(str(path), fmt, scale)]).result()
        return 0
    from rooflake.render.roofline import roofline_chart
    from rooflake.render.save import save_chart
    from rooflake.render.tables import zero_flop_table

    below = zero_flop_table(points)
    chart = roofline_chart(points, ceilings, level=level, precision=precision, title=title, noun=noun)
    save_chart(chart, path, below=below, noun=noun)
    return below.height
