"""Hierarchical roofline charts (Altair / Vega-Lite specs): table in, chart out.

Nothing here computes roofline quantities from raw metrics: the points are rows of the ``kernel_roofline``
query and the roofs are rows of the ``run_ceilings`` query. This module only selects, reshapes and draws them;
the only arithmetic is the geometry of the roof lines (``y = min(W * x, P)`` sampled over the axis range) and
formatting.

Formulas drawn (the seed papers and NVIDIA's own sections):

- Williams, Waterman, Patterson, "Roofline: an insightful visual performance model for multicore
  architectures", CACM 52(4), 2009: attainable FLOP/s = min(P, AI * W); the roofs meet at the ridge point
  AI = P / W.
- Yang, Kurth, Williams, "Hierarchical Roofline analysis for GPUs", CCPE 2020 (NERSC): one arithmetic
  intensity per memory level, AI_l = F / Q_l for l in L1, L2, DRAM, drawn against that level's bandwidth roof.
- Nsight Compute sections ``SpeedOfLight_RooflineChart`` and
  ``SpeedOfLight_Hierarchical{Double,Single,Half,Tensor}RooflineChart``: the peaks (``peak_sustained`` x the
  unit's clock) that ``run_ceilings`` reports, and the chart layout (log-log, one point per level per kernel).

Saving is in :mod:`rooflake.render.save`; input normalisation and the zero-FLOP table in
:mod:`rooflake.render.tables`.
"""

from __future__ import annotations

import math
from typing import Any

import altair as alt
import polars as pl

from rooflake.render.tables import (
    _CEILING_OPTIONAL,
    _CEILING_REQUIRED,
    _LEVEL_LABEL,
    _LEVEL_ORDER,
    _POINT_OPTIONAL,
    _POINT_REQUIRED,
    _PRECISION_CEILINGS,
    Table,
    _conform,
    _frame,
    _has_flops,
    _keys,
    _pick_ceilings,
    _point_rows,
    _select_rows,
    _share,
    _values,
    zero_flop_table,
)
from rooflake.schema import RooflineDataError

__all__ = ["LEVELS", "PRECISIONS", "roofline_chart"]

#: ``level`` arguments of :func:`roofline_chart` (``all`` draws the three levels at once).
LEVELS = ("dram", "l2", "l1", "all")
#: ``precision`` arguments of :func:`roofline_chart` (``all`` = each kernel's dominant precision).
PRECISIONS = ("fp64", "fp32", "fp16", "tensor", "all")

X_RANGE = (1e-3, 1e4)  # FLOP/byte, the least x range of the chart (extended to the data and the ridge points)

_LEVEL_SHAPE = {"L1": "triangle-up", "L2": "square", "DRAM": "circle"}
_BW_COLOR = {"L1": "#aaaaaa", "L2": "#666666", "DRAM": "#111111"}  # roofs in greys, kernels in colour
_FLAG_STROKE = "#e31a1c"


def flag_outline() -> dict[str, Any]:
    """Point encodings that outline flagged points in red (rows with a boolean ``flagged`` column: above their roof,
    below their time bound, or flagged at ingest), the others in a thin white line. Every chart uses this one."""
    return {
        "stroke": alt.condition("datum.flagged", alt.value(_FLAG_STROKE), alt.value("white")),
        "strokeWidth": alt.condition("datum.flagged", alt.value(2.5), alt.value(0.7)),
    }


def _si(value: float, unit: str) -> str:
    """``2.0386e12, 'B/s'`` -> ``'2.04 TB/s'`` (3 significant digits, SI prefix)."""
    for factor, prefix in ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor * 0.9995:
            return f"{value / factor:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def _decades(lo: float, hi: float) -> list[float]:
    return [10.0**e for e in range(math.ceil(math.log10(lo) - 1e-9), math.floor(math.log10(hi) + 1e-9) + 1)]


# --------------------------------------------------------------------------------------------------- chart


def _ceiling_label(row: dict[str, Any]) -> str:
    unit = "B/s" if row["kind"] == "bandwidth" else "FLOP/s"
    source = f" ({row['source']})" if row.get("source") else ""
    return f"{row['ceiling']} {_si(float(row['value']), unit)}{source}"


def _ceiling_style(ceiling: str, kind: str, top: bool) -> tuple[str, list[int]]:
    """(colour, dash) of a roof: bandwidth roofs solid, darker the farther out; the top compute roof solid."""
    if kind == "bandwidth":
        return _BW_COLOR.get(ceiling, "#777777"), [1, 0]
    return ("#111111", [1, 0]) if top else ("#555555", [6, 3])


def _ceiling_lines(bw: pl.DataFrame, comp: pl.DataFrame, x_lo: float, x_hi: float) -> pl.DataFrame:
    """Sampled (ai, flops_per_s) rows of every roof line.

    Bandwidth roof of level l: y = W_l * x up to its ridge with the top compute roof P (so y = min(W_l * x, P)
    where drawn); compute roof P_p: y = P_p from its ridge with the widest bandwidth roof drawn to the right
    edge.
    """
    p_max = float(comp.get_column("value").max()) if comp.height else None  # type: ignore[arg-type]
    w_max = float(bw.get_column("value").max()) if bw.height else None  # type: ignore[arg-type]
    grid = _decades(x_lo, x_hi)
    rows: list[dict[str, Any]] = []
    order = 0
    for row in bw.iter_rows(named=True):
        w = float(row["value"])
        end = x_hi if p_max is None else min(max(p_max / w, x_lo), x_hi)
        color, dash = _ceiling_style(row["ceiling"], "bandwidth", False)
        for x in sorted({x_lo, end, *(g for g in grid if g < end)}):
            y = w * x if p_max is None else min(w * x, p_max)
            row_out = {**row, "label": _ceiling_label(row), "order": order, "ai": x, "flops_per_s": y}
            rows.append({**row_out, "color": color, "dash": dash})
        order += 1
    for row in comp.iter_rows(named=True):
        p = float(row["value"])
        start = x_lo if w_max is None else min(max(p / w_max, x_lo), x_hi)
        color, dash = _ceiling_style(row["ceiling"], "compute", p == p_max)
        for x in sorted({start, x_hi, *(g for g in grid if g > start)}):
            row_out = {**row, "label": _ceiling_label(row), "order": order, "ai": x, "flops_per_s": p}
            rows.append({**row_out, "color": color, "dash": dash})
        order += 1
    cols: dict[str, pl.DataType] = {
        "label": pl.String(),
        "ceiling": pl.String(),
        "kind": pl.String(),
        "value": pl.Float64(),
        "value_min": pl.Float64(),
        "value_max": pl.Float64(),
        "clock_hz": pl.Float64(),
        "source": pl.String(),
        "formula": pl.String(),
        "n_kernels": pl.Int64(),
        "n_invalid": pl.Int64(),
        "order": pl.Int64(),
        "ai": pl.Float64(),
        "flops_per_s": pl.Float64(),
        "color": pl.String(),
        "dash": pl.List(pl.Int64()),
    }
    return pl.DataFrame([{c: r.get(c) for c in cols} for r in rows], schema=cols)


def _ceiling_text(
    lines: pl.DataFrame, x: tuple[float, float], y: tuple[float, float], width: int, height: int
) -> pl.DataFrame:
    """One label per roof, placed on the line.

    Bandwidth roofs near the left edge, rotated by ``angle`` (degrees, Vega convention) to follow the slope of
    y = W * x on the log-log plot; compute roofs at the right edge.
    """
    x_dec = math.log10(x[1] / x[0])
    y_dec = math.log10(y[1] / y[0])
    slope_deg = math.degrees(math.atan((height / y_dec) / (width / x_dec)))
    out: list[dict[str, Any]] = []
    for (order,), grp in lines.group_by(["order"], maintain_order=True):
        first = grp.row(0, named=True)
        text = first["label"].rsplit(" (", 1)[0]  # the legend carries the source
        if first["kind"] == "bandwidth":
            end = float(grp.get_column("ai").max())  # type: ignore[arg-type]
            ax = min(x[0] * 10 ** (0.04 * x_dec), math.sqrt(x[0] * end))
            w = float(first["value"])
            ay = w * ax
            if ay < y[0]:  # the roof enters the plot above its left edge: start where it does
                ax, ay = y[0] / w * 10 ** (0.04 * x_dec), y[0] * 10 ** (0.04 * x_dec)
            out.append(
                {
                    "order": order,
                    "text": text,
                    "ai": ax,
                    "flops_per_s": ay,
                    "angle": -slope_deg,
                    "align": "left",
                }
            )
        else:
            out.append(
                {
                    "order": order,
                    "text": text,
                    "ai": x[1],
                    "flops_per_s": float(first["value"]),
                    "angle": 0.0,
                    "align": "right",
                }
            )
    schema = {
        "order": pl.Int64(),
        "text": pl.String(),
        "ai": pl.Float64(),
        "flops_per_s": pl.Float64(),
        "angle": pl.Float64(),
        "align": pl.String(),
    }
    return pl.DataFrame(out, schema=schema)


def _log_range(values: list[float], lo: float | None = None, hi: float | None = None) -> tuple[float, float]:
    """Decade-aligned range covering ``values`` (and ``lo``/``hi`` if given)."""
    vals = [v for v in values if v > 0 and math.isfinite(v)]
    if not vals:
        return (lo or 1.0, hi or 10.0)
    a = 10.0 ** math.floor(math.log10(min(vals)))
    b = 10.0 ** math.ceil(math.log10(max(vals) * 1.5))
    return (min(a, lo) if lo else a, max(b, hi) if hi else b)


def _x_range(ai: list[float], ridges: list[float]) -> tuple[float, float]:
    """X_RANGE, extended by a decade beyond the points' AI and the ridge points."""
    vals = [v for v in ai + ridges if v > 0 and math.isfinite(v)]
    lo, hi = X_RANGE
    if vals:
        lo = min(lo, 10.0 ** (math.floor(math.log10(min(vals))) - 1))
        hi = max(hi, 10.0 ** (math.ceil(math.log10(max(vals))) + 1))
    return lo, hi


def roofline_chart(
    points: Table,
    ceilings: Table,
    *,
    level: str = "dram",
    precision: str = "all",
    title: str | None = None,
) -> alt.LayerChart:
    """The hierarchical roofline of one run: kernels as points under the machine's roofs, log-log.

    Inputs (pyarrow.Table or polars.DataFrame):

    - ``points``: rows of the ``kernel_roofline`` query (one per kernel x precision). Used columns:
      ``run_id``, ``kernel_id``, ``name`` (demangled; shown truncated to 80 characters), ``short_name``,
      ``nvtx_path``, ``precision`` (fp64|fp32|fp16|tensor), ``is_dominant`` (bool), ``duration_ns`` (ns, may
      be NaN), ``flops`` (FLOP), ``bytes_l1/l2/dram`` (byte), ``ai_l1/l2/dram`` (FLOP/byte),
      ``achieved_flops_per_s`` (FLOP/s), ``attainable_l1/l2/dram`` and ``attainable_flops_per_s`` (FLOP/s),
      ``fraction_of_roof``, ``zero_flops``, ``bound``, ``above_roof`` (bool), ``flags`` (list[str]).
      Display-only columns may be absent.
    - ``ceilings``: rows of the ``run_ceilings`` query for ONE run: ``ceiling`` (DRAM, L2, L1, FP64, FP32,
      FP16, TENSOR, TENSOR_FP16, ...), ``kind`` (bandwidth|compute), ``value`` (byte/s or FLOP/s; null or NaN
      = not drawn), and for the legend and tooltips ``source``, ``value_min``, ``value_max``, ``formula``,
      ``n_kernels``, ``n_invalid``, ``machine_key``.

    ``level``: ``dram``, ``l2``, ``l1``, or ``all`` (the three levels, one marker shape each: L1 triangle, L2
    square, DRAM circle). ``precision``: ``fp64``, ``fp32``, ``fp16``, ``tensor``, or ``all`` (each kernel's
    dominant precision, the rows with ``is_dominant``).

    Drawn (Williams, Waterman, Patterson, "Roofline", CACM 2009; Yang et al., "Hierarchical Roofline analysis
    for GPUs", 2020; the layout of ncu's ``SpeedOfLight_Hierarchical*RooflineChart`` sections):

    - x = arithmetic intensity AI_l = F / Q_l (FLOP/byte, column ``ai_<level>``), y = achieved FLOP/s, both
      log.
    - one point per kernel (per level with ``level='all'``) whose FLOPs, AI and achieved FLOP/s are > 0;
      zero-FLOP kernels are left to :func:`zero_flop_table` and counted in the subtitle, as are kernels
      lacking bytes or a duration. Points with ``above_roof`` or non-empty ``flags`` get a red outline (never
      dropped).
    - bandwidth roofs of the chosen level(s): y = min(W * x, P), P the largest compute ceiling drawn (the
      sloped line ends at its ridge point P / W); compute ceilings y = P from the ridge point P / W (W the
      largest bandwidth drawn) to the right edge. Compute ceilings drawn: the chosen precision's (fp64 FP64,
      fp32 FP32, fp16 FP16, tensor TENSOR_FP16 else TENSOR), or for ``all`` those of every precision with a
      drawn point. Legend entries carry value and source, e.g. ``DRAM 2.04 TB/s (ncu-report)``; each roof is
      also labelled on the plot.

    The layers are named ``ceilings`` (line data: ``label``, ``ceiling``, ``kind``, ``value``, ``ai``,
    ``flops_per_s``), ``ceiling_labels_bandwidth`` / ``_compute`` (text), ``links`` (``level='all'`` only: a
    faint line joining a kernel's three points) and ``points`` (``ai``, ``achieved_flops_per_s``, ``level``,
    ``kernel``, ...).

    Raises:
        ValueError: unknown ``level`` / ``precision``, a required column missing, or ``ceilings`` of several
            runs.
        TypeError: an input that is neither a pyarrow.Table nor a polars.DataFrame.
        RooflineDataError: no point can be drawn, because every selected row lacks FLOPs, bytes at the level,
            or a usable duration; the message says which quantities are missing and how to collect them.
    """
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r} (choose one of: {', '.join(LEVELS)})")
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r} (choose one of: {', '.join(PRECISIONS)})")
    levels = list(_LEVEL_ORDER) if level == "all" else [level]
    pts = _conform(
        _frame(points, "points"),
        _POINT_REQUIRED + tuple(f"ai_{lv}" for lv in levels),
        _POINT_OPTIONAL,
        "points (kernel_roofline rows)",
    )
    ceil = _conform(
        _frame(ceilings, "ceilings"), _CEILING_REQUIRED, _CEILING_OPTIONAL, "ceilings (run_ceilings rows)"
    )
    runs = ceil.get_column("run_id").drop_nulls().unique().to_list()
    if len(runs) > 1:
        raise ValueError(
            f"ceilings hold {len(runs)} runs ({', '.join(sorted(runs))}): pass the rows of one run"
        )

    rows = _select_rows(pts, precision)
    long, reasons = _point_rows(rows, levels)
    level_text = "L1, L2 and DRAM" if level == "all" else _LEVEL_LABEL[level]
    prec_text = "each kernel's dominant precision" if precision == "all" else precision
    all_keys = _keys(pts)
    zero_keys = _keys(zero_flop_table(pts))
    # kernels without FLOPs in this precision (no row, or 0 FLOPs) that do have FLOPs in another one
    no_prec_flops = (all_keys - _keys(rows.filter(_has_flops()))) - zero_keys
    if long.height == 0:
        run_ids = ", ".join(sorted({str(r) for r, _ in all_keys})) or "?"
        parts = [f"{n} {text}" for what, n, text in reasons if what != "flops"]
        if zero_keys:
            parts.insert(0, f"{len(zero_keys)} have no FLOPs at all (zero or not counted)")
        if no_prec_flops:
            parts.insert(0, f"{len(no_prec_flops)} have no {precision} FLOPs")
        found = (
            pts.filter(_has_flops()).get_column("precision").unique().sort().to_list() if pts.height else []
        )
        hint = f" (FLOPs were counted in: {', '.join(found)})" if found and precision != "all" else ""
        raise RooflineDataError(
            f"run {run_ids}: no kernel can be drawn on the {level_text} roofline ({prec_text}): "
            f"of {len(all_keys)} kernel(s), {'; '.join(parts) or 'none has roofline rows'}{hint}. "
            "A roofline needs FLOP counts, bytes at the level and a duration: "
            "profile with `ncu --set roofline` (or the SpeedOfLight_Hierarchical*RooflineChart sections), "
            "or choose another level or precision"
        )

    drawn_precisions = (
        sorted(set(long.get_column("precision").to_list()), key=list(_PRECISION_CEILINGS).index)
        if precision == "all"
        else [precision]
    )
    bw, comp, missing = _pick_ceilings(ceil, levels, drawn_precisions)
    ridges = [float(p) / float(w) for p in comp.get_column("value") for w in bw.get_column("value")]
    x_lo, x_hi = _x_range(long.get_column("ai").to_list(), ridges)
    lines = _ceiling_lines(bw, comp, x_lo, x_hi)
    y_lo, y_hi = _log_range(
        lines.get_column("flops_per_s").to_list() + long.get_column("achieved_flops_per_s").to_list()
    )
    width, height = 640, 420
    labels_text = _ceiling_text(lines, (x_lo, x_hi), (y_lo, y_hi), width, height)

    x_enc = alt.X(
        "ai:Q",
        scale=alt.Scale(type="log", domain=[x_lo, x_hi], nice=False),
        axis=alt.Axis(
            title=f"Arithmetic intensity at {level_text} (FLOP/byte)",
            values=_decades(x_lo, x_hi),
            labelExpr="datum.value >= 1e5 || datum.value < 1e-4 ? format(datum.value, '.0e') "
            ": format(datum.value, '~g')",
        ),
    )

    def y_enc(field: str) -> alt.Y:
        return alt.Y(
            f"{field}:Q",
            scale=alt.Scale(type="log", domain=[y_lo, y_hi], nice=False),
            axis=alt.Axis(title="Performance (FLOP/s)", format="~s", values=_decades(y_lo, y_hi)),
        )

    legend_rows = lines.unique("label", maintain_order=True)
    roof_layer = (
        alt.Chart(alt.NamedData(name="rl_ceilings"), name="ceilings")
        .mark_line(strokeWidth=2, clip=True)
        .encode(
            x=x_enc,
            y=y_enc("flops_per_s"),
            color=alt.Color(
                "label:N",
                title="Ceilings",
                scale=alt.Scale(
                    domain=legend_rows.get_column("label").to_list(),
                    range=legend_rows.get_column("color").to_list(),
                ),
                legend=alt.Legend(orient="right", labelLimit=320, symbolType="stroke", symbolStrokeWidth=2),
            ),
            strokeDash=alt.StrokeDash(
                "label:N",
                title="Ceilings",
                scale=alt.Scale(
                    domain=legend_rows.get_column("label").to_list(),
                    range=legend_rows.get_column("dash").to_list(),
                ),
            ),
            detail="order:O",
            order="ai:Q",
            tooltip=[
                alt.Tooltip("label:N", title="ceiling"),
                alt.Tooltip("formula:N", title="formula"),
                alt.Tooltip("value_min:Q", title="min over launches", format=".3~s"),
                alt.Tooltip("value_max:Q", title="max over launches", format=".3~s"),
                alt.Tooltip("n_kernels:Q", title="launches with a valid peak"),
                alt.Tooltip("n_invalid:Q", title="launches with NaN/0 peak"),
            ],
        )
    )
    text_style: dict[str, Any] = {"baseline": "bottom", "dy": -3, "fontSize": 11, "color": "#333333"}
    bw_text = labels_text.filter(pl.col("align") == "left")
    comp_text = labels_text.filter(pl.col("align") == "right")
    text_layers = [
        alt.Chart(alt.NamedData(name="rl_ceiling_labels_bandwidth"), name="ceiling_labels_bandwidth")
        .mark_text(
            align="left", angle=float((bw_text.get_column("angle").to_list() or [0.0])[0]) % 360, **text_style
        )
        .encode(x=x_enc, y=y_enc("flops_per_s"), text="text:N"),
        alt.Chart(alt.NamedData(name="rl_ceiling_labels_compute"), name="ceiling_labels_compute")
        .mark_text(align="right", dx=-4, **text_style)
        .encode(x=x_enc, y=y_enc("flops_per_s"), text="text:N"),
    ]

    multi = level == "all"
    points_data = alt.NamedData(name="rl_points")
    n_colors = long.get_column("kernel").n_unique()
    kernel_color = alt.Color(
        "kernel:N",
        title="Kernel",
        scale=alt.Scale(scheme="tableau10" if n_colors <= 10 else "tableau20"),
        legend=alt.Legend(orient="right", labelLimit=260, symbolLimit=20),
    )
    tooltip = [
        alt.Tooltip("name:N", title="kernel"),
        alt.Tooltip("short_name:N", title="short name"),
        alt.Tooltip("nvtx_path:N", title="NVTX"),
        alt.Tooltip("precision:N", title="precision"),
        alt.Tooltip("level:N", title="level"),
        alt.Tooltip("ai:Q", title="AI (FLOP/byte)", format=".4~g"),
        alt.Tooltip("achieved_flops_per_s:Q", title="achieved (FLOP/s)", format=".4~s"),
        alt.Tooltip("attainable_level:Q", title="attainable at level (FLOP/s)", format=".4~s"),
        alt.Tooltip("attainable_flops_per_s:Q", title="attainable (FLOP/s)", format=".4~s"),
        alt.Tooltip("fraction_of_roof:Q", title="fraction of roof", format=".1%"),
        alt.Tooltip("bound:N", title="bound"),
        alt.Tooltip("duration_ns:Q", title="duration (ns)", format=",.0f"),
        alt.Tooltip("flags:N", title="flags"),
        alt.Tooltip("run_id:N", title="run"),
        alt.Tooltip("kernel_id:Q", title="kernel id"),
    ]
    point_enc: dict[str, Any] = {
        "x": x_enc,
        "y": y_enc("achieved_flops_per_s"),
        "color": kernel_color,
        **flag_outline(),
        "tooltip": tooltip,
    }
    if multi:
        point_enc["shape"] = alt.Shape(
            "level:N",
            title="Level",
            scale=alt.Scale(domain=list(_LEVEL_SHAPE), range=list(_LEVEL_SHAPE.values())),
            legend=alt.Legend(orient="right"),
        )
    point_layer = (
        alt.Chart(points_data, name="points")
        .mark_point(filled=True, size=110, opacity=0.9, shape="circle")
        .encode(**point_enc)
    )
    layers: list[alt.Chart] = [roof_layer, *text_layers]
    if multi:
        layers.append(
            alt.Chart(points_data, name="links")
            .mark_line(strokeWidth=1, opacity=0.5, color="#888888")
            .encode(
                x=x_enc,
                y=y_enc("achieved_flops_per_s"),
                detail=alt.Detail(["run_id:N", "kernel_id:Q"]),
                order="ai:Q",
            )
        )
    layers.append(point_layer)

    # subtitle: what is drawn, what is not (never silently)
    n_pts = long.select(pl.struct("run_id", "kernel_id").n_unique()).item()
    subtitle = [f"{level_text} roofline, {prec_text}: {n_pts} kernel(s) drawn"]
    not_drawn = [f"{len(no_prec_flops)} kernel(s) have no {precision} FLOPs"] if no_prec_flops else []
    not_drawn += [f"{n} kernel(s) {text}" for what, n, text in reasons if what == "time"]
    if not_drawn:
        subtitle.append("Not drawn: " + "; ".join(not_drawn))
    for what, n, text in reasons:
        if what in _LEVEL_SHAPE:
            subtitle.append(f"{'No ' + what + ' point' if multi else 'Not drawn'}: {n} kernel(s) {text}")
    if zero_keys:
        zero = zero_flop_table(pts)
        total = float(zero.unique("run_id").get_column("total_share_of_time").sum())
        subtitle.append(f"{zero.height} kernel(s) without FLOPs ({_share(total)} of time) listed apart")
    n_flagged = long.filter(pl.col("flagged")).select(pl.struct("run_id", "kernel_id").n_unique()).item()
    if n_flagged:
        subtitle.append(f"Red outline: above its roof or flagged by ingest ({n_flagged} kernel(s))")
    if missing:
        subtitle.append("No valid ceiling in this run for: " + ", ".join(missing))
    if title is None:
        keys = ceil.get_column("machine_key").drop_nulls().unique().to_list()
        title = "Hierarchical roofline" + (f" · {keys[0]}" if len(keys) == 1 else "")

    # one constructor call: Altair deep-copies a chart (and any data inside it) on every method call
    return alt.LayerChart(
        layer=layers,
        resolve=alt.Resolve(
            scale=alt.ScaleResolveMap(color="independent", shape="independent", strokeDash="independent")
        ),
        width=width,
        height=height,
        title=alt.TitleParams(text=title, subtitle=subtitle, anchor="start", subtitleColor="#555555"),
        datasets={
            "rl_ceilings": _values(lines.drop("color", "dash")),
            "rl_ceiling_labels_bandwidth": _values(bw_text),
            "rl_ceiling_labels_compute": _values(comp_text),
            "rl_points": _values(long),
        },
    )
