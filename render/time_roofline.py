"""Time-based roofline charts: rows of the ``time_roofline`` query in, Vega-Lite specs out.

The specs are built as plain dicts (:func:`time_roofline_spec`, :func:`time_vs_complexity_spec`,
:func:`complexity_plane_spec`), the dicts Altair's ``to_dict`` gave of the Altair charts this module built before,
key for key and in the same order (tests/test_time_spec.py: golden specs of real reports), so that ``rl report``
imports no Altair (it cost 0.2-0.3 s of a report's process). The ``*_chart`` functions give the same specs as
Altair charts (:func:`rooflake.render.compose.altair_chart`), to compose, display or save. The layers of a spec
share their encoding dicts (one axis, colour or tooltip dict per panel): copy a spec (``copy.deepcopy``) before
changing a layer of it.

Wang, Yang, Farrell, Zhang, Kurth, Williams, "Time-Based Roofline for Deep Learning Performance Analysis", arXiv
2009.04598 (docs/architecture.md section 5): a kernel with F FLOPs and Q_l bytes at level l takes at least
T_min = max(F / P, Q_l / W_l, t_o); s = T / T_min is its inefficiency. Two views:

- :func:`time_vs_complexity_chart`: measured time T against FLOPs (left) and against bytes at one level (right),
  log-log, with the bound line of every ceiling (T = F / P for compute ceilings, T = Q / W for bandwidth ceilings)
  and the launch-overhead floor T = t_o.
- :func:`complexity_plane_chart`: FLOPs (y) against bytes (x), log-log, with iso-AI diagonals, the ridge diagonal
  F = (P / W) Q of each compute x bandwidth ceiling pair, and the overhead box F < P t_o, Q < W t_o, inside which a
  kernel is launch-bound whatever it does.

Everything computed (T_min, s, bound) comes from the query; this module only reshapes rows and draws the geometry
of the lines. Filled marks are measured, hollow marks ideal; a mark's shape is its bound
(:func:`rooflake.render.marks.bound_shape`: a memory level's own marker, L1 ▲, L2 ■, DRAM ●, as on every chart; a
cross for a compute bound; a diamond for launch overhead). Saving is :func:`rooflake.render.save.save_chart`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from rooflake.render.axes import LogAxis, decades, padded_range, slope_angle
from rooflake.render.formats import ChartTitle, duration, runs_said, si, truncate
from rooflake.render.inputs import Table, ceiling_rows, conform, frame, positive, values
from rooflake.render.marks import LEVEL_LABEL, bound_order, bound_shape, flag_outline_spec
from rooflake.render.roofs import (
    PRECISION_CEILINGS,
    SOURCE_COLOR,
    overlay_roofs,
    pick_ceilings,
    roof_name,
    split_overlay,
    wanted_compute,
)
from rooflake.render.rows import SCHEMA_URL, THEME_CONFIG, layer_spec, mark_spec, tooltips_spec
from rooflake.schema import RooflineDataError

if TYPE_CHECKING:
    import altair as alt

__all__ = [
    "TIME_LEVELS",
    "complexity_plane_chart",
    "complexity_plane_spec",
    "time_roofline_chart",
    "time_roofline_spec",
    "time_vs_complexity_chart",
    "time_vs_complexity_spec",
]

#: ``level`` arguments: the memory level of the bytes axis.
TIME_LEVELS = ("dram", "l2", "l1")

_ROW_REQUIRED = ("run_id", "name", "duration_ns", "flops", "t_min_ns", "launch_overhead_ns")
_ROW_OPTIONAL: dict[str, pl.DataType] = {
    "grain": pl.String(),
    "kernel_id": pl.Int64(),
    "depth": pl.Int64(),
    "short_name": pl.String(),
    "precision": pl.String(),
    "n_kernels": pl.Int64(),
    "inefficiency": pl.Float64(),
    "bound": pl.String(),
    "overhead_floor_ns": pl.Float64(),
    "launch_overhead_source": pl.String(),
    "compute_time_ns": pl.Float64(),
    "below_bound": pl.Boolean(),
    "flags": pl.List(pl.String()),
    **{f"bytes_{lv}": pl.Float64() for lv in TIME_LEVELS},
    **{f"{lv}_time_ns": pl.Float64() for lv in TIME_LEVELS},
}
_FLOOR_COLOR = "#d95f02"
_ROOF_COLOR = "#333333"
_W, _H = 430, 340


# --------------------------------------------------------------------------------------------------- rows


def _points(rows: Table, level: str) -> tuple[pl.DataFrame, float, str]:
    """Conformed point rows (one per kernel or layer) with display columns, t_o (ns) and its source."""
    if level not in TIME_LEVELS:
        raise ValueError(f"unknown level {level!r} (choose one of: {', '.join(TIME_LEVELS)})")
    df = conform(frame(rows, "rows"), _ROW_REQUIRED, _ROW_OPTIONAL, "rows (time_roofline rows)")
    t_o_values = df.get_column("launch_overhead_ns").drop_nulls().unique().to_list()
    if len(t_o_values) > 1:
        raise ValueError(f"rows use {len(t_o_values)} launch overheads: pass the rows of one query call")
    t_o = float(t_o_values[0]) if t_o_values else float("nan")
    source = next(iter(df.get_column("launch_overhead_source").drop_nulls().to_list()), None) or "?"
    is_layer = pl.col("grain").fill_null("kernel") == "layer"
    name = pl.col("name").cast(pl.String)
    label = (
        pl.when(is_layer & (name.str.len_chars() > 40))
        .then("…" + name.str.slice(-39))
        .when(is_layer)
        .then(name)
        .otherwise(pl.coalesce(pl.col("short_name"), truncate(name, 40)))
    )
    flags = pl.col("flags").cast(pl.List(pl.String)).list.join(", ").fill_null("")
    s = pl.col("inefficiency")
    df = df.with_row_index("point").with_columns(
        label.alias("kernel"),
        truncate(name).alias("name"),
        flags.alias("flags"),
        (pl.col("duration_ns") * 1e-9).alias("time_s"),
        (pl.col("t_min_ns") * 1e-9).alias("t_min_s"),
        (pl.col("overhead_floor_ns") * 1e-9).alias("floor_s"),
        pl.col(f"bytes_{level}").alias("bytes"),
        pl.col(f"{level}_time_ns").alias("level_time_ns"),
        (pl.col(f"bytes_{level}") * s).alias("bytes_at_t"),
        (pl.col("flops") * s).alias("flops_at_t"),
        (pl.col("below_bound").fill_null(False) | (flags != "")).alias("flagged"),
        pl.col("bound").fill_null("unknown"),
    )
    # one colour per row: kernels sharing a short name (several launches) get their kernel id appended
    shared = (pl.len().over("kernel") > 1) & pl.col("kernel_id").is_not_null()
    df = df.with_columns(
        pl.when(shared)
        .then(pl.col("kernel") + " #" + pl.col("kernel_id").cast(pl.String))
        .otherwise(pl.col("kernel"))
        .alias("kernel")
    )
    return df, t_o, source


def _drawable(*cols: str) -> pl.Expr:
    """The row has a measured T, a T_min and every column of ``cols`` > 0."""
    expr = positive("time_s") & positive("t_min_s")
    for c in cols:
        expr = expr & positive(c)
    return expr


def _precisions(pts: pl.DataFrame) -> list[str]:
    """The precisions whose compute roofs the rows need (all of them for a layer of ``mixed`` precision)."""
    found = set(pts.get_column("precision").drop_nulls().to_list())
    if "mixed" in found:
        found |= set(PRECISION_CEILINGS)
    return [p for p in PRECISION_CEILINGS if p in found]


# --------------------------------------------------------------------------------------------------- geometry


def _line(
    label: str, kind: str, k: float, x: tuple[float, float], y: tuple[float, float]
) -> list[dict[str, Any]]:
    """Endpoints of y = k * x (a slope-1 line on log-log axes) clipped to the box x by y; [] if it misses."""
    x0, x1 = max(x[0], y[0] / k), min(x[1], y[1] / k)
    if x0 >= x1:
        return []
    return [
        {"label": label, "kind": kind, "x": x0, "y": k * x0},
        {"label": label, "kind": kind, "x": x1, "y": k * x1},
    ]


def _hline(label: str, kind: str, v: float, x: tuple[float, float]) -> list[dict[str, Any]]:
    """Endpoints of y = v across the box's x range (the caller's y range covers v)."""
    return [
        {"label": label, "kind": kind, "x": x[0], "y": v},
        {"label": label, "kind": kind, "x": x[1], "y": v},
    ]


def _labels(lines: list[dict[str, Any]], angle: float) -> list[dict[str, Any]]:
    """One text per line near its upper end (sloped lines follow the slope; horizontal ones lie flat)."""
    out = []
    by_label: dict[str, list[dict[str, Any]]] = {}
    for r in lines:
        by_label.setdefault(r["label"], []).append(r)
    for label, (a, b) in ((k, (v[0], v[-1])) for k, v in by_label.items()):
        flat = a["y"] == b["y"]
        # 85 % of the way along the line, in log space
        t = 0.97 if flat else 0.85
        x = a["x"] ** (1 - t) * b["x"] ** t
        y = a["y"] ** (1 - t) * b["y"] ** t
        out.append({"text": label, "kind": a["kind"], "x": x, "y": y, "angle": 0.0 if flat else angle % 360})
    return out


def _nominal(field: str, **props: Any) -> dict[str, Any]:
    """A nominal channel of ``field`` as Altair's ``to_dict`` gives it (keys in name order)."""
    return {"field": field, **dict(sorted(props.items())), "type": "nominal"}


def _line_layers(
    name: str, ax: LogAxis, ay: LogAxis, lines: list[dict[str, Any]], angle: float, colors: dict[str, str]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Line and label layers, and their datasets ``rl_<name>_lines`` (label, kind, x, y, color, dash) and
    ``rl_<name>_labels`` (text, kind, x, y, angle, color). Colours and dashes are per row (identity scales), so
    they never share a scale with the points' kernel colours. The lines' ends lie in the plot (:func:`_line`,
    :func:`_hline`), so only the labels are clipped: a clip path costs vl-convert's PNG a mask of the whole canvas
    per line (:func:`rooflake.render.rows.roof_layers_spec`)."""
    styled = [{**r, "color": colors[r["kind"]], "dash": _DASH[r["kind"]]} for r in lines]
    labels = [{**r, "color": colors[r["kind"]]} for r in _labels(lines, angle)]
    xy = {"x": ax.x("x"), "y": ay.y("y")}
    color = _nominal("color", scale=None)
    line = layer_spec(
        f"rl_{name}_lines",
        mark_spec("line", strokeWidth=1.6),
        {**xy, "detail": _nominal("label"), "color": color, "strokeDash": _nominal("dash", scale=None),
         "tooltip": tooltips_spec([("label:N", "line", None)])},
        f"{name}_lines",
    )  # fmt: skip
    text = layer_spec(
        f"rl_{name}_labels",
        mark_spec("text", align="right", baseline="bottom", dy=-3, fontSize=10, clip=True),
        {**xy, "text": _nominal("text"), "angle": {"field": "angle", "scale": None, "type": "quantitative"},
         "color": color},
        f"{name}_labels",
    )  # fmt: skip
    return [line, text], {f"rl_{name}_lines": styled, f"rl_{name}_labels": labels}


_DASH = {
    "compute": [1, 0],
    "bandwidth": [1, 0],
    "overhead": [5, 3],
    "iso-AI": [2, 3],
    "ridge": [6, 3],
    "overlay": [5, 3],
}
_POINT_TOOLTIP: list[tuple[str, str, str | None]] = [
    ("name:N", "name", None),
    ("bound:N", "bound", None),
    ("duration_ns:Q", "T (ns)", ",.0f"),
    ("t_min_ns:Q", "T_min (ns)", ",.0f"),
    ("inefficiency:Q", "s = T / T_min", ".3~f"),
    ("flops:Q", "F (FLOP)", ".4~s"),
    ("bytes:Q", "Q (byte)", ".4~s"),
    ("compute_time_ns:Q", "F / P (ns)", ",.1f"),
    ("level_time_ns:Q", "Q / W (ns)", ",.1f"),
    ("overhead_floor_ns:Q", "overhead floor (ns)", ",.0f"),
    ("precision:N", "pipe", None),
    ("flags:N", "flags", None),
]


def _point_layers(
    name: str,
    x_field: str,
    y_field: str,
    ideal_x: str,
    ideal_y: str,
    ax: LogAxis,
    ay: LogAxis,
    bounds: list[str],
) -> list[dict[str, Any]]:
    """Rule from measured to ideal, hollow ideal mark, filled measured mark (one per row of rl_<name>_points)."""
    data = f"rl_{name}_points"
    color = _nominal("kernel", title="Kernel / layer", legend={"labelLimit": 260, "symbolLimit": 20})
    shape = _nominal(
        "bound",
        title="Bound (○ ideal, ● measured)",
        scale={"domain": bounds, "range": [bound_shape(b) for b in bounds]},
    )
    tooltip = tooltips_spec(_POINT_TOOLTIP)
    x_enc, y_enc = ax.x(x_field), ay.y(y_field)
    return [
        layer_spec(
            data,
            mark_spec("rule", opacity=0.45, strokeWidth=1.2),
            {"x": x_enc, "y": y_enc, "x2": {"field": ideal_x}, "y2": {"field": ideal_y}, "color": color},
            f"{name}_gap",
        ),
        layer_spec(
            data,
            mark_spec("point", filled=False, size=90, strokeWidth=1.6),
            {"x": ax.x(ideal_x), "y": ay.y(ideal_y), "color": color, "shape": shape, "tooltip": tooltip},
            f"{name}_ideal",
        ),
        layer_spec(
            data,
            mark_spec("point", filled=True, size=100, opacity=0.95),
            {
                "x": x_enc,
                "y": y_enc,
                "color": color,
                "shape": shape,
                **flag_outline_spec(),
                "tooltip": tooltip,
            },
            f"{name}_measured",
        ),
    ]


def _point_cols(df: pl.DataFrame) -> pl.DataFrame:
    return df.select(
        "point",
        "run_id",
        "kernel_id",
        "kernel",
        "name",
        "precision",
        "bound",
        "duration_ns",
        "t_min_ns",
        "inefficiency",
        "flops",
        "bytes",
        "compute_time_ns",
        "level_time_ns",
        "overhead_floor_ns",
        "time_s",
        "t_min_s",
        "floor_s",
        "bytes_at_t",
        "flops_at_t",
        "flags",
        "flagged",
    )


def _bounds(df: pl.DataFrame) -> list[str]:
    """The bounds of the rows, in legend order (:func:`rooflake.render.marks.bound_order`)."""
    return bound_order(set(df.get_column("bound").to_list()))


def _no_points(df: pl.DataFrame, what: str) -> RooflineDataError:
    no_tmin = df.filter(~positive("t_min_s")).height
    no_time = df.filter(~positive("time_s")).height
    return RooflineDataError(
        f"{runs_said({str(r) for r in df.get_column('run_id').to_list()})}nothing to draw on the {what}: of "
        f"{df.height} row(s), {no_tmin} have no T_min (no FLOP or byte counters with a roof), {no_time} no usable duration, and the rest lack {what.split(' vs ')[-1]}. "
        "Profile with `ncu --set roofline` (or the SpeedOfLight_Hierarchical*RooflineChart sections)"
    )


# --------------------------------------------------------------------------------------------------- charts


@dataclass(frozen=True)
class _Rows:
    """One chart's conformed inputs: point rows (:func:`_points`), t_o (ns) and its source, ceilings, level."""

    df: pl.DataFrame
    t_o: float
    source: str
    ceil: pl.DataFrame
    level: str
    others: pl.DataFrame  # other sources' roofs, drawn dashed beside ``ceil`` (--ceilings all)

    @property
    def t_o_s(self) -> float | None:
        """t_o in seconds, None where it is unknown or not > 0."""
        return self.t_o * 1e-9 if self.t_o > 0 and math.isfinite(self.t_o) else None

    def roofs(self, pts: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
        """(bandwidth rows of the level, compute rows of the precisions of ``pts``) to draw."""
        wanted = wanted_compute(pts, _precisions(pts))
        bw, comp, _missing = pick_ceilings(self.ceil, [self.level], wanted)
        return bw, comp

    def overlays(self, pts: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
        """(bandwidth rows, compute rows) of the other sources, every source's together."""
        picked = overlay_roofs(self.others, [self.level], wanted_compute(pts, _precisions(pts)))
        if not picked:
            return self.others.clear(), self.others.clear()
        return (pl.concat([b for b, _ in picked], how="diagonal_relaxed"),
                pl.concat([c for _, c in picked], how="diagonal_relaxed"))  # fmt: skip


def _prepare(rows: Table, ceilings: Table, level: str) -> _Rows:
    df, t_o, source = _points(rows, level)
    ceil, others = split_overlay(ceiling_rows(ceilings))
    return _Rows(df, t_o, source, ceil, level, others)


def _time_vs_complexity(r: _Rows) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The two time panels (T vs F, T vs Q at the level), to be put side by side, and their datasets."""
    lv = LEVEL_LABEL[r.level]
    by_f = _point_cols(r.df.filter(_drawable("flops")))
    by_q = _point_cols(r.df.filter(_drawable("bytes")))
    if by_f.height == 0 and by_q.height == 0:
        raise _no_points(r.df, f"time vs FLOPs or {lv} bytes")
    bw, comp = r.roofs(r.df.filter(_drawable()))
    obw, ocomp = r.overlays(r.df.filter(_drawable()))
    t_o_s = r.t_o_s
    times = [*(p.get_column(c).to_list() for p in (by_f, by_q) for c in ("time_s", "t_min_s"))]
    y_dom = padded_range([v for col in times for v in col] + ([t_o_s] if t_o_s else []))
    datasets: dict[str, Any] = {}
    panels = []
    for name, pts, x_title, kind, roofs in (
        ("flops", by_f, "Work F (FLOP)", "compute", (comp, ocomp)),
        ("bytes", by_q, f"Data moved Q at {lv} (byte)", "bandwidth", (bw, obw)),
    ):
        panel, data = _time_panel(r, name, pts, x_title, kind, roofs, y_dom)
        panels.append(panel)
        datasets.update(data)
    return panels, datasets


def _bound_lines(
    r: _Rows,
    kind: str,
    roofs: list[tuple[str, float, str | None]],
    x_dom: tuple[float, float],
    y_dom: tuple[float, float],
    overlay: bool = False,
) -> list[dict[str, Any]]:
    """The bound line T = F / P (compute) or T = Q / W (bandwidth) of each roof (name, value, source), named with
    its source, and the t_o floor; ``overlay``: other sources' lines (style ``overlay``), without the floor."""
    unit = "FLOP/s" if kind == "compute" else "B/s"
    sym = "F/P" if kind == "compute" else "Q/W"
    lines: list[dict[str, Any]] = []
    for name, value, src in roofs:
        label = f"T = {sym}, {name} {si(value, unit)}" + (f" ({src})" if src else "")
        lines += _line(label, "overlay" if overlay else kind, 1.0 / value, x_dom, y_dom)
    if r.t_o_s and not overlay:
        lines += _hline(f"t_o = {duration(r.t_o)} ({r.source})", "overhead", r.t_o_s, x_dom)
    return lines


def _time_panel(
    r: _Rows,
    name: str,
    pts: pl.DataFrame,
    x_title: str,
    kind: str,
    roof_rows: tuple[pl.DataFrame, pl.DataFrame],
    y_dom: tuple[float, float],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One panel: measured T (and T_min) of ``pts`` against column ``name`` (flops | bytes), the bound lines of
    ``roof_rows`` (the points' source's rows, and the other sources' drawn dashed; ``kind`` compute | bandwidth),
    the t_o floor, and each layer's n · t_o tick."""
    roofs, extra = ([(roof_name(row), float(row["value"]), row.get("source_label"))
                     for row in rows.iter_rows(named=True)] for rows in roof_rows)  # fmt: skip
    # x range: the points, and where each roof crosses the t_o floor (roof * t_o)
    t_o_s = r.t_o_s
    x_dom = padded_range(pts.get_column(name).to_list() + ([v * t_o_s for _, v, _ in roofs] if t_o_s else []))
    ax, ay = LogAxis(x_title, x_dom), LogAxis("Time T (s)", y_dom)
    colors = {"compute": _ROOF_COLOR, "bandwidth": _ROOF_COLOR, "overhead": _FLOOR_COLOR}
    colors["overlay"] = SOURCE_COLOR["datasheet"]
    lines = _bound_lines(r, kind, roofs, x_dom, y_dom) + _bound_lines(r, kind, extra, x_dom, y_dom, True)
    layers, line_data = _line_layers(f"tc_{name}", ax, ay, lines, -slope_angle(x_dom, y_dom, _W, _H), colors)
    layers += _point_layers(f"tc_{name}", name, "time_s", name, "t_min_s", ax, ay, _bounds(pts))
    if (r.df.get_column("n_kernels").fill_null(1) > 1).any():  # layers: each one's n * t_o floor
        tick = mark_spec("tick", orient="horizontal", thickness=2, size=16, color=_FLOOR_COLOR, opacity=0.8)
        layers.append(layer_spec(f"rl_tc_{name}_points", tick, {"x": ax.x(name), "y": ay.y("floor_s")},
                                 f"tc_{name}_floors"))  # fmt: skip
    what = "FLOPs" if name == "flops" else LEVEL_LABEL[r.level] + " bytes"
    head = {"text": f"Time vs {what} ({pts.height} drawn)", "anchor": "start", "fontSize": 12}
    panel = {"layer": layers, "width": _W, "height": _H, "title": head}
    return panel, {f"rl_tc_{name}_points": values(pts), **line_data}


def _corners(r: _Rows, comp: pl.DataFrame, bw: pl.DataFrame) -> list[tuple[float, float, str, float, float]]:
    """Per (compute, bandwidth) roof pair: (W t_o in byte, P t_o in FLOP, compute roof name, P, W)."""
    return [
        (float(w["value"]) * r.t_o * 1e-9, float(p["value"]) * r.t_o * 1e-9, roof_name(p), float(p["value"]),
         float(w["value"]))
        for p in comp.iter_rows(named=True)
        for w in bw.iter_rows(named=True)
    ]  # fmt: skip


def _plane_lines(
    corners: list[tuple[float, float, str, float, float]],
    lv: str,
    x_dom: tuple[float, float],
    y_dom: tuple[float, float],
) -> list[dict[str, Any]]:
    """Iso-AI diagonals every decade of AI that crosses the plot (F = AI * Q), and each pair's ridge diagonal."""
    lines: list[dict[str, Any]] = []
    ai_lo, ai_hi = y_dom[0] / x_dom[1], y_dom[1] / x_dom[0]
    for ai in decades(ai_lo * 10, ai_hi / 10):
        lines += _line(f"AI {ai:,.0f}" if ai >= 1 else f"AI {ai:g}", "iso-AI", ai, x_dom, y_dom)
    for _x, _y, name, p, w in corners:
        lines += _line(f"ridge {name}/{lv} {p / w:.3g} FLOP/B", "ridge", p / w, x_dom, y_dom)
    return lines


def _box_layers(ax: LogAxis, ay: LogAxis, t_o: float) -> list[dict[str, Any]]:
    """The launch-overhead box(es) F < P t_o, Q < W t_o (dataset ``rl_cp_boxes``) and their label."""
    # the box's corners lie in the plot (its domains cover them): no clip path (see _line_layers)
    rect = mark_spec("rect", color=_FLOOR_COLOR, fillOpacity=0.12, stroke=_FLOOR_COLOR, strokeOpacity=0.7,
                     strokeDash=[5, 3])  # fmt: skip
    box = {"x": ax.x("x"), "y": ay.y("y"), "x2": {"field": "x2"}, "y2": {"field": "y2"},
           "tooltip": tooltips_spec([("label:N", "", None)])}  # fmt: skip
    text = mark_spec("text", align="right", baseline="top", dx=-4, dy=4, fontSize=10, color=_FLOOR_COLOR)
    label = {"x": ax.x("x2"), "y": ay.y("y2"), "text": {"value": f"t_o box ({duration(t_o)})"}}
    return [
        layer_spec("rl_cp_boxes", rect, box, "cp_overhead_box"),
        layer_spec("rl_cp_boxes", text, label, "cp_overhead_box_label"),
    ]


def _complexity_plane(r: _Rows, title: ChartTitle = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The complexity plane (F vs Q at the level) and its datasets ``rl_cp_*``."""
    lv = LEVEL_LABEL[r.level]
    pts = _point_cols(r.df.filter(_drawable("flops", "bytes")))
    if pts.height == 0:
        raise _no_points(r.df, f"complexity plane vs FLOPs and {lv} bytes")
    bw, comp = r.roofs(pts)
    corners = _corners(r, comp, bw) if r.t_o_s else []
    x_dom = padded_range([*pts.get_column("bytes"), *pts.get_column("bytes_at_t"), *(c[0] for c in corners)])
    y_dom = padded_range([*pts.get_column("flops"), *pts.get_column("flops_at_t"), *(c[1] for c in corners)])
    boxes = [
        {"x": x_dom[0], "x2": x, "y": y_dom[0], "y2": y,
         "label": f"launch-overhead box ({name}): F < P·t_o = {si(y, 'FLOP')}, Q < W·t_o = {si(x, 'B')}"}
        for x, y, name, _p, _w in corners
    ]  # fmt: skip
    ax, ay = LogAxis(f"Data moved Q at {lv} (byte)", x_dom), LogAxis("Work F (FLOP)", y_dom)
    lines = _plane_lines(_corners(r, comp, bw), lv, x_dom, y_dom)
    colors = {"iso-AI": "#aaaaaa", "ridge": _ROOF_COLOR}
    line_layers, line_data = _line_layers("cp", ax, ay, lines, -slope_angle(x_dom, y_dom, 560, 420), colors)
    layers = [*_box_layers(ax, ay, r.t_o), *line_layers]
    layers += _point_layers("cp", "bytes", "flops", "bytes_at_t", "flops_at_t", ax, ay, _bounds(pts))
    n_launch = pts.filter(pl.col("bound") == "launch_overhead").height
    subtitle = [
        f"● measured (Q, F); ○ (Q, F) × s: the work a kernel of the same AI at its bound does in the measured time T. "
        f"t_o = {duration(r.t_o)} ({r.source})",
        f"{pts.height} drawn, {n_launch} launch-bound (diamonds): inside the shaded box a kernel takes t_o "
        "whatever it does",
    ]
    head = {
        "text": title or "Complexity plane",
        "anchor": "start",
        "subtitle": subtitle,
        "subtitleColor": "#555555",
    }
    chart = {"layer": layers, "width": 560, "height": 420, "title": head}
    return chart, {"rl_cp_boxes": boxes, "rl_cp_points": values(pts), **line_data}


def _title(df: pl.DataFrame, t_o: float, source: str, title: ChartTitle) -> dict[str, Any]:
    n_rows = df.height
    below = df.filter(pl.col("below_bound").fill_null(False)).height
    sub = [
        "● measured T, ○ ideal T_min = max(F/P, Q/W, t_o) (Wang et al., arXiv 2009.04598); s = T / T_min; "
        f"launch overhead t_o = {duration(t_o)} ({source})",
    ]
    if (df.get_column("n_kernels").fill_null(1) > 1).any():
        sub.append("Orange tick: a layer's floor n · t_o (n launches); T_min is the sum over its kernels")
    no_tmin = df.filter(~positive("t_min_ns")).height
    if no_tmin:
        sub.append(f"Not drawn: {no_tmin} of {n_rows} without T_min (no counters or roofs)")
    if below:
        sub.append(f"Red outline: T < T_min or flagged by ingest ({below} below their bound)")
    return {
        "text": title or "Time-based roofline",
        "anchor": "start",
        "subtitle": sub,
        "subtitleColor": "#555555",
    }


def _numbered(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Concatenated ``parts`` with the layers of each layered part named ``<name>_<position>``, as Altair's
    concatenation names them (a single part keeps its names)."""
    if len(parts) > 1:
        for i, part in enumerate(parts):
            for layer in part.get("layer", ()):
                base, _, tail = layer["name"].rpartition("_")
                layer["name"] = f"{base if tail.isdigit() and base else layer['name']}_{i}"
    return parts


def _top(body: dict[str, Any], datasets: dict[str, Any]) -> dict[str, Any]:
    """A top-level spec as Altair's ``to_dict`` gives it: the default theme's config first, the chart's own
    properties, its datasets, the schema's URL last."""
    return {"config": {k: dict(v) for k, v in THEME_CONFIG.items()}, **body, "datasets": datasets,
            "$schema": SCHEMA_URL}  # fmt: skip


def time_vs_complexity_spec(
    rows: Table, ceilings: Table, *, level: str = "dram", title: ChartTitle = None
) -> dict[str, Any]:
    """Measured time against work, log-log: T vs F (left) and T vs Q at ``level`` (right), one point per row.

    Inputs (pyarrow.Table or polars.DataFrame):

    - ``rows``: rows of the ``time_roofline`` query, all of one run and one ``grain`` (kernel rows, or layer rows of
      one depth). Used columns: ``run_id``, ``name``, ``duration_ns`` (T, ns), ``flops`` (F, FLOP), ``t_min_ns``
      (ns), ``launch_overhead_ns`` (t_o, ns, one value), and when present ``bytes_<level>`` (byte), ``bound``,
      ``inefficiency``, ``short_name``, ``precision``, ``n_kernels``, ``overhead_floor_ns``, ``compute_time_ns``,
      ``<level>_time_ns``, ``launch_overhead_source``, ``below_bound``, ``flags``, ``grain`` (kernel|layer), ``kernel_id``.
    - ``ceilings``: ``run_ceilings`` rows of the run (``ceiling``, ``kind``, ``value`` in FLOP/s or byte/s).

    Drawn (Wang et al., arXiv 2009.04598): the bound line T = F / P of each compute ceiling of the precisions
    drawn (left), T = Q / W of the level's bandwidth (right), the launch-overhead floor T = t_o (dashed, both), and
    per row a filled mark at the measured T, a hollow one at T_min (same x) joined by a rule whose length is s on
    the log axis; marker shape = bound (diamond: launch overhead), colour = kernel or layer, red outline = T < T_min or
    ingest flags. Layer rows also get a tick at their n * t_o floor. Rows without T_min, duration or the axis'
    quantity are left out (counted in the title's subtitle).

    Returns the Vega-Lite spec (a dict: ``hconcat`` of two layered panels, ``$schema``, Altair's default theme's
    ``config``) with top-level ``datasets`` (``rl_tc_flops_*`` and ``rl_tc_bytes_*``: lines, labels,
    points). Raises ``ValueError`` (unknown level, a required column missing, ceilings of several runs, several
    t_o), ``TypeError`` (input type), :class:`RooflineDataError` (no row can be drawn on either panel).
    """
    r = _prepare(rows, ceilings, level)
    panels, datasets = _time_vs_complexity(r)
    body = {"hconcat": _numbered(panels), "spacing": 30, "title": _title(r.df, r.t_o, r.source, title)}
    return _top(body, datasets)


def complexity_plane_spec(
    rows: Table, ceilings: Table, *, level: str = "dram", title: ChartTitle = None
) -> dict[str, Any]:
    """The complexity plane: F (y) against Q at ``level`` (x), log-log, one filled point per row.

    Inputs as :func:`time_vs_complexity_chart`. Drawn (Wang et al., arXiv 2009.04598): iso-AI diagonals F = AI * Q
    every decade (grey, dotted), the ridge diagonal F = (P / W) Q of each compute ceiling drawn with the level's
    bandwidth (dashed), the launch-overhead box F < P t_o, Q < W t_o (shaded: a kernel inside it is launch-bound
    whatever it does); per row a filled mark at its measured (Q, F) and a hollow one at (Q, F) x s (the work a
    kernel of the same AI at its bound would do in the measured time; the rule between them lies on the row's
    iso-AI diagonal and its length is s), shape = bound (diamond: launch overhead).

    Returns the Vega-Lite spec (a dict: ``layer``) with top-level ``datasets`` ``rl_cp_lines``, ``rl_cp_labels``, ``rl_cp_boxes``,
    ``rl_cp_points``. Raises as :func:`time_vs_complexity_chart` (no row with F > 0, Q > 0, T and T_min).
    """
    chart, datasets = _complexity_plane(_prepare(rows, ceilings, level), title)
    return _top(chart, datasets)


def time_roofline_spec(
    rows: Table, ceilings: Table, *, level: str = "dram", title: ChartTitle = None
) -> dict[str, Any]:
    """Both views stacked: :func:`time_vs_complexity_chart` above :func:`complexity_plane_chart` (inputs, drawing and
    errors as there). The plane is left out, with a note in the subtitle, when no row has both F > 0 and Q > 0
    (e.g. only zero-FLOP kernels). Returns the Vega-Lite spec (a dict: ``vconcat``) with every dataset at the top level."""
    r = _prepare(rows, ceilings, level)
    panels, datasets = _time_vs_complexity(r)
    head = _title(r.df, r.t_o, r.source, title)
    parts: list[dict[str, Any]] = [{"hconcat": _numbered(panels), "spacing": 30}]
    try:
        plane, plane_data = _complexity_plane(r)
    except RooflineDataError:
        head["subtitle"] = [*head["subtitle"], "No complexity plane: no row has both FLOPs and bytes"]
    else:
        parts.append(plane)
        datasets.update(plane_data)
    return _top({"vconcat": _numbered(parts), "spacing": 28, "title": head}, datasets)


def time_vs_complexity_chart(
    rows: Table, ceilings: Table, *, level: str = "dram", title: ChartTitle = None
) -> alt.HConcatChart:
    """:func:`time_vs_complexity_spec` as an Altair chart (:func:`rooflake.render.compose.altair_chart`): the
    inputs, drawing and errors as there."""
    from rooflake.render.compose import altair_chart

    return altair_chart(time_vs_complexity_spec(rows, ceilings, level=level, title=title))  # type: ignore[no-any-return]


def complexity_plane_chart(
    rows: Table, ceilings: Table, *, level: str = "dram", title: ChartTitle = None
) -> alt.LayerChart:
    """:func:`complexity_plane_spec` as an Altair chart (:func:`rooflake.render.compose.altair_chart`)."""
    from rooflake.render.compose import altair_chart

    return altair_chart(complexity_plane_spec(rows, ceilings, level=level, title=title))  # type: ignore[no-any-return]


def time_roofline_chart(
    rows: Table, ceilings: Table, *, level: str = "dram", title: ChartTitle = None
) -> alt.VConcatChart:
    """:func:`time_roofline_spec` as an Altair chart (:func:`rooflake.render.compose.altair_chart`)."""
    from rooflake.render.compose import altair_chart

    return altair_chart(time_roofline_spec(rows, ceilings, level=level, title=title))  # type: ignore[no-any-return]
