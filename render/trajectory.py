"""Roofline trajectories (Altair / Vega-Lite spec): table in, chart out.

A trajectory is the ordered sequence of (AI, FLOP/s) points of one NVTX layer or one kernel as one knob (a run
label such as ``batch``) varies across runs, drawn as a connected line with arrows in the direction of growing
knob values (Javed, Ibrahim, Lu, "Roofline trajectories", 2019; Ibrahim, Williams, Oliker). The points are rows
of the ``trajectory`` query and the roofs rows of ``run_ceilings``; this module selects, orders and draws them.
The only arithmetic is geometry: arrow positions (the log-space midpoint of each segment) and angles (the
segment's direction on screen), and the roof lines (shared with :mod:`rooflake.render.roofline`).
"""

from __future__ import annotations

import math
from typing import Any

import altair as alt
import polars as pl

from rooflake.render.roofline import _ceiling_lines, _ceiling_text, _decades, flag_outline
from rooflake.render.tables import (
    _CEILING_OPTIONAL,
    _CEILING_REQUIRED,
    _LEVEL_LABEL,
    _LEVEL_ORDER,
    _PRECISION_CEILINGS,
    Table,
    _conform,
    _frame,
    _pick_ceilings,
    _positive,
    _values,
)
from rooflake.schema import RooflineDataError

__all__ = ["ARROW_SHAPE", "TRAJECTORY_LEVELS", "trajectory_chart"]

#: ``level`` arguments of :func:`trajectory_chart` (``all`` draws the three levels at once).
TRAJECTORY_LEVELS = ("dram", "l2", "l1", "all")

_REQUIRED = ("series", "entity", "level", "run_id", "value", "step", "ai", "flops_per_s")
_OPTIONAL: dict[str, pl.DataType] = {
    "vary": pl.String(),
    "entity_kind": pl.String(),
    "label": pl.String(),
    "nvtx_path": pl.String(),
    "value_num": pl.Float64(),
    "value_order": pl.String(),
    "precision": pl.String(),
    "flops": pl.Float64(),
    "bytes": pl.Float64(),
    "time_ns": pl.Float64(),
    "attainable_flops_per_s": pl.Float64(),
    "above_roof": pl.Boolean(),
    "flags": pl.List(pl.String()),
}
_LEVEL_SHAPE = {"L1": "triangle-up", "L2": "square", "DRAM": "circle"}
_LEVEL_DASH = {"L1": [2, 2], "L2": [6, 3], "DRAM": [1, 0]}
_BW_COLOR = {"L1": "#aaaaaa", "L2": "#666666", "DRAM": "#111111"}
# arrowhead: an SVG path in Vega's [-1, 1] symbol box, tip at +x (an equilateral 'triangle-right' rotated by an
# arbitrary angle looks the same as one rotated by +-120 degrees: its direction cannot be read)
ARROW_SHAPE = "M-1,-0.8L1,0L-1,0.8L-0.45,0Z"
_WIDTH, _HEIGHT = 640, 420
_ARROW_SIZE = 220.0  # px^2, the arrowheads' area on long segments
# Vega's tableau10 / tableau20 schemes, spelled out so every layer maps a trajectory to the same colour
_TABLEAU10 = ("#4c78a8", "#f58518", "#e45756", "#72b7b2", "#54a24b", "#eeca3b", "#b279a2", "#ff9da6", "#9d755d",
              "#bab0ac")  # fmt: skip
_TABLEAU20 = ("#4c78a8", "#9ecae9", "#f58518", "#ffbf79", "#54a24b", "#88d27a", "#b79a20", "#f2cf5b", "#439894",
              "#83bcb6", "#e45756", "#ff9d98", "#79706e", "#bab0ac", "#d67195", "#fcbfd2", "#b279a2", "#d6a5c9",
              "#9e765f", "#d8b5a5")  # fmt: skip


def _log_domain(values: list[float], min_decades: float = 2.0) -> tuple[float, float]:
    """A range covering ``values`` with a little room, its ends on half decades, at least ``min_decades``
    wide (widened on both sides)."""
    vals = [v for v in values if v > 0 and math.isfinite(v)]
    if not vals:
        return (1.0, 10.0**min_decades)
    lo = math.floor((math.log10(min(vals)) - 0.15) * 2) / 2
    hi = math.ceil((math.log10(max(vals)) + 0.3) * 2) / 2  # room for the labels above points and roofs
    while hi - lo < min_decades:
        lo, hi = lo - 0.5, hi + 0.5
    return 10.0**lo, 10.0**hi


def _merge_ceilings(ceil: pl.DataFrame) -> tuple[pl.DataFrame, int, int]:
    """One row per ceiling over the runs of the sweep: median value, min/max over the runs, counts summed.

    Returns (rows, number of runs, number of machines)."""
    valid = ceil.filter(_positive("value"))
    n_runs = valid.get_column("run_id").n_unique()
    n_machines = valid.get_column("machine_key").drop_nulls().n_unique()
    merged = valid.group_by("ceiling", maintain_order=True).agg(
        pl.col("kind").first(),
        pl.col("value").median(),
        pl.col("value_min").min(),
        pl.col("value_max").max(),
        pl.col("clock_hz").median(),
        pl.col("unit").first(),
        pl.col("formula").first(),
        pl.col("source").first(),
        pl.col("n_kernels").sum(),
        pl.col("n_invalid").sum(),
        pl.col("machine_key").first(),
        pl.lit(None, dtype=pl.String()).alias("run_id"),
    )
    return merged, n_runs, n_machines


def _arrows(pts: pl.DataFrame, x: tuple[float, float], y: tuple[float, float]) -> pl.DataFrame:
    """One arrow per segment of every trajectory: at the segment's midpoint in log space, ``angle`` = the
    segment's direction on screen in degrees, clockwise from +x (Vega's rotation of :data:`ARROW_SHAPE`)."""
    sx = _WIDTH / math.log10(x[1] / x[0])
    sy = _HEIGHT / math.log10(y[1] / y[0])
    out: list[dict[str, Any]] = []
    for (_,), grp in pts.group_by(["traj_id"], maintain_order=True):
        rows = grp.to_dicts()
        for a, b in zip(rows, rows[1:], strict=False):
            dx = (math.log10(b["ai"]) - math.log10(a["ai"])) * sx
            dy = (math.log10(b["flops_per_s"]) - math.log10(a["flops_per_s"])) * sy
            if math.hypot(dx, dy) < 1.0:  # the same spot on screen: no direction to show
                continue
            out.append(
                {
                    "traj_id": a["traj_id"],
                    "trajectory": a["trajectory"],
                    "series": a["series"],
                    "entity": a["entity"],
                    "level": a["level"],
                    "from_step": a["step"],
                    "to_step": b["step"],
                    "from_value": a["value"],
                    "to_value": b["value"],
                    "ai": math.sqrt(a["ai"] * b["ai"]),
                    "flops_per_s": math.sqrt(a["flops_per_s"] * b["flops_per_s"]),
                    "angle": math.degrees(math.atan2(-dy, dx)),
                    # symbol area in px^2: the dart at most half as long as its segment
                    "size": min(_ARROW_SIZE, max(24.0, (math.hypot(dx, dy) / 2) ** 2)),
                    "ai_change": b["ai"] / a["ai"],
                    "flops_change": b["flops_per_s"] / a["flops_per_s"],
                }
            )
    schema = {
        "traj_id": pl.Int64(),
        "trajectory": pl.String(),
        "series": pl.String(),
        "entity": pl.String(),
        "level": pl.String(),
        "from_step": pl.Int64(),
        "to_step": pl.Int64(),
        "from_value": pl.String(),
        "to_value": pl.String(),
        "ai": pl.Float64(),
        "flops_per_s": pl.Float64(),
        "angle": pl.Float64(),
        "size": pl.Float64(),
        "ai_change": pl.Float64(),
        "flops_change": pl.Float64(),
    }
    return pl.DataFrame(out, schema=schema)


def _value_labels(pts: pl.DataFrame, x: tuple[float, float], y: tuple[float, float]) -> pl.DataFrame:
    """One text per point with the varied value; points of one trajectory that fall within 3 px of each other
    on screen share one text (``'8, 16, 32'`` for an entity that did not move)."""
    sx = _WIDTH / math.log10(x[1] / x[0])
    sy = _HEIGHT / math.log10(y[1] / y[0])
    out: list[dict[str, Any]] = []
    for (_,), grp in pts.group_by(["traj_id"], maintain_order=True):
        placed: list[dict[str, Any]] = []
        for r in grp.iter_rows(named=True):
            px, py = math.log10(r["ai"]) * sx, math.log10(r["flops_per_s"]) * sy
            near = next((p for p in placed if math.hypot(p["_px"] - px, p["_py"] - py) < 3.0), None)
            if near is None:
                placed.append(
                    {
                        "traj_id": r["traj_id"],
                        "trajectory": r["trajectory"],
                        "ai": r["ai"],
                        "flops_per_s": r["flops_per_s"],
                        "text": r["value"],
                        "_px": px,
                        "_py": py,
                    }
                )
            elif r["value"] not in near["text"].split(", "):
                near["text"] += f", {r['value']}"
        out += placed
    schema = {
        "traj_id": pl.Int64(),
        "trajectory": pl.String(),
        "ai": pl.Float64(),
        "flops_per_s": pl.Float64(),
        "text": pl.String(),
    }
    return pl.DataFrame([{k: r[k] for k in schema} for r in out], schema=schema)


def _sweep_text(pts: pl.DataFrame) -> str:
    """``'8 → 16 → 32'``: the values of the sweep in step order (of the first series if several)."""
    first = pts.get_column("series").first()
    vals = (
        pts.filter(pl.col("series") == first)
        .unique(["step", "value"])
        .sort("step", "value")
        .group_by("step", maintain_order=True)
        .agg(pl.col("value").str.join("/"))
        .get_column("value")
        .to_list()
    )
    if len(vals) > 8:
        vals = [*vals[:3], "…", *vals[-3:]]
    return " → ".join(vals)


def trajectory_chart(
    rows: Table, ceilings: Table | None = None, *, level: str = "dram", title: str | None = None
) -> alt.LayerChart:
    """Roofline trajectories: each layer's or kernel's (AI, FLOP/s) points across a sweep, connected in the order
    of the varied label's value, with arrows, log-log.

    Inputs (pyarrow.Table or polars.DataFrame):

    - ``rows``: rows of the ``trajectory`` query, already filtered by the caller (entity kind, series, layer).
      Used columns: ``series`` (the other labels, 'k=v, ...'), ``entity`` (identity across runs), ``level``
      (l1|l2|dram), ``run_id``, ``value`` (text of the varied label), ``step`` (1..n, the order), ``ai``
      (FLOP/byte), ``flops_per_s`` (FLOP/s); display-only and optional: ``vary``, ``label`` (short name),
      ``value_order``, ``precision`` (picks the compute roofs), ``flops``, ``bytes``, ``time_ns``,
      ``attainable_flops_per_s``, ``above_roof`` and ``flags`` (red outline when above the roof or flagged),
      ``nvtx_path``, ``entity_kind``.
    - ``ceilings``: rows of ``run_ceilings`` for the runs of the sweep (any number of runs: one roof per
      ceiling, the median over the runs, min and max in the tooltip), or None for no roofs.

    ``level``: ``dram``, ``l2``, ``l1``, or ``all`` (three lines per entity: L1 dotted with triangles, L2 dashed
    with squares, DRAM solid with circles).

    Drawn: one line per (series, entity, level), its points ordered by ``step`` (Vega-Lite ``order`` encoding;
    runs sharing a step by run id: the ``order`` encoding is ``seq``, that rank), each point labelled with the varied value; one arrowhead per segment
    (:data:`ARROW_SHAPE`, a dart pointing to +x, at the segment's log-space
    midpoint, rotated along it), so the direction of the sweep
    shows on every segment. Points above their roof or with ingest flags get a red outline (never dropped). Points that cannot sit on a log axis (no
    FLOPs, 0 bytes, NaN or 0 time) are left out and counted in the subtitle. Roofs as in
    :func:`rooflake.render.roofline_chart`: bandwidth roofs of the drawn level(s) and the compute roofs of the
    points' precisions.

    Layers (named): ``ceilings``, ``ceiling_labels_bandwidth``, ``ceiling_labels_compute`` (with ceilings),
    ``lines``, ``arrows``, ``points``, ``values``. Datasets: ``rl_traj_points`` (one row per drawn point,
    ``traj_id``, ``trajectory`` = legend name, ``step``, ``value``, ``ai``, ``flops_per_s``, ...) and
    ``rl_traj_arrows`` (``from_step``, ``to_step``, ``from_value``, ``to_value``, ``ai``, ``flops_per_s``,
    ``angle`` in degrees clockwise from +x on screen) and ``rl_traj_values`` (``text``: the value(s) written at
    a point; points of one trajectory on the same spot share one text, e.g. ``'8, 16, 32'``).

    Raises:
        ValueError: unknown ``level`` or a required column missing.
        TypeError: an input that is neither a pyarrow.Table nor a polars.DataFrame.
        RooflineDataError: no point can be drawn.
    """
    if level not in TRAJECTORY_LEVELS:
        raise ValueError(f"unknown level {level!r} (choose one of: {', '.join(TRAJECTORY_LEVELS)})")
    levels = list(_LEVEL_ORDER) if level == "all" else [level]
    df = _conform(_frame(rows, "rows"), _REQUIRED, _OPTIONAL, "rows (trajectory query rows)")
    df = df.filter(pl.col("level").is_in(levels))
    ok = _positive("ai") & _positive("flops_per_s")
    drawn = df.filter(ok)
    n_left_out = df.height - drawn.height
    level_text = "L1, L2 and DRAM" if level == "all" else _LEVEL_LABEL[level]
    if drawn.height == 0:
        raise RooflineDataError(
            f"no point can be drawn on the {level_text} trajectory chart: of {df.height} row(s), none has "
            "FLOPs > 0, bytes > 0 at the level and a usable time (NaN or 0 durations, zero-FLOP kernels "
            "and missing counters have no place on a log-log roofline)"
        )
    vary = (drawn.get_column("vary").drop_nulls().first() if "vary" in drawn.columns else None) or "value"
    multi_series = drawn.get_column("series").n_unique() > 1

    # one trajectory per (series, entity kind, entity, level); its legend name is short when that is unique
    keys = ["series", "entity_kind", "entity"]
    names = drawn.unique(keys).with_columns(pl.coalesce("label", "entity").alias("_short"))
    short_unique = names.height == names.get_column("_short").n_unique()
    name_col = "_short" if short_unique else "entity"
    series_text = pl.when(pl.col("series") == "").then(pl.lit("(no other label)")).otherwise(pl.col("series"))
    names = names.with_columns(  # several series: the name says which
        (pl.col(name_col) + pl.lit(" · ") + series_text if multi_series else pl.col(name_col)).alias(
            "trajectory"
        )
    ).select(*keys, "trajectory")
    flags = pl.col("flags").cast(pl.List(pl.String)).list.join(", ").fill_null("")
    pts = (
        drawn.join(names, on=keys, how="left", nulls_equal=True)
        .with_columns(
            pl.col("level").replace_strict(_LEVEL_LABEL, default=pl.col("level")).alias("level"),
            flags.alias("flags"),
        )
        .with_columns(pl.col("above_roof").fill_null(False))
        .with_columns((pl.col("above_roof") | (pl.col("flags") != "")).alias("flagged"))
        .with_columns(pl.struct(*keys, "level").rank("dense").cast(pl.Int64).alias("traj_id"))
        .sort("traj_id", "step", "run_id")
        .with_columns(pl.int_range(pl.len()).over("traj_id").cast(pl.Int64).alias("seq"))
    )

    # roofs
    bw = comp = None
    missing: list[str] = []
    ceil_note = ""
    if ceilings is not None:
        ceil = _conform(
            _frame(ceilings, "ceilings"), _CEILING_REQUIRED, _CEILING_OPTIONAL, "ceilings (run_ceilings rows)"
        )
        merged, n_runs, n_machines = _merge_ceilings(ceil)
        precs = [p for p in _PRECISION_CEILINGS if p in set(pts.get_column("precision").drop_nulls())]
        bw, comp, missing = _pick_ceilings(merged, levels, precs)
        if n_runs > 1:
            ceil_note = f"Ceilings: median over {n_runs} runs" + (
                f" on {n_machines} machines (values differ: see the tooltip's min/max)"
                if n_machines > 1
                else ""
            )
    ridges = (
        [float(p) / float(w) for p in comp.get_column("value") for w in bw.get_column("value")]
        if bw is not None and comp is not None
        else []
    )
    ai_vals = pts.get_column("ai").to_list()
    fs_vals = pts.get_column("flops_per_s").to_list()
    x_lo, x_hi = _log_domain(ai_vals + ridges)
    peaks = comp.get_column("value").to_list() if comp is not None else []
    y_lo, y_hi = _log_domain(fs_vals + peaks)
    arrows = _arrows(pts, (x_lo, x_hi), (y_lo, y_hi))
    value_labels = _value_labels(pts, (x_lo, x_hi), (y_lo, y_hi))

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
    y_enc = alt.Y(
        "flops_per_s:Q",
        scale=alt.Scale(type="log", domain=[y_lo, y_hi], nice=False),
        axis=alt.Axis(title="Performance (FLOP/s)", format="~s", values=_decades(y_lo, y_hi)),
    )
    layers: list[alt.Chart] = []
    datasets: dict[str, Any] = {}
    if bw is not None and comp is not None and (bw.height or comp.height):
        lines = _ceiling_lines(bw, comp, x_lo, x_hi)
        labels_text = _ceiling_text(lines, (x_lo, x_hi), (y_lo, y_hi), _WIDTH, _HEIGHT)
        legend_rows = lines.unique("label", maintain_order=True)
        domain = legend_rows.get_column("label").to_list()
        layers.append(
            alt.Chart(alt.NamedData(name="rl_ceilings"), name="ceilings")
            .mark_line(strokeWidth=2, clip=True)
            .encode(
                x=x_enc,
                y=y_enc,
                color=alt.Color(
                    "label:N",
                    title="Ceilings",
                    scale=alt.Scale(domain=domain, range=legend_rows.get_column("color").to_list()),
                    legend=alt.Legend(orient="right", labelLimit=320, symbolType="stroke"),
                ),
                strokeDash=alt.StrokeDash(
                    "label:N",
                    title="Ceilings",
                    scale=alt.Scale(domain=domain, range=legend_rows.get_column("dash").to_list()),
                ),
                detail="order:O",
                order="ai:Q",
                tooltip=[
                    alt.Tooltip("label:N", title="ceiling"),
                    alt.Tooltip("formula:N", title="formula"),
                    alt.Tooltip("value_min:Q", title="min over runs' launches", format=".3~s"),
                    alt.Tooltip("value_max:Q", title="max over runs' launches", format=".3~s"),
                ],
            )
        )
        text_style: dict[str, Any] = {"baseline": "bottom", "dy": -3, "fontSize": 11, "color": "#333333"}
        bw_text = labels_text.filter(pl.col("align") == "left")
        comp_text = labels_text.filter(pl.col("align") == "right")
        angle = float((bw_text.get_column("angle").to_list() or [0.0])[0]) % 360
        layers += [
            alt.Chart(alt.NamedData(name="rl_ceiling_labels_bandwidth"), name="ceiling_labels_bandwidth")
            .mark_text(align="left", angle=angle, **text_style)
            .encode(x=x_enc, y=y_enc, text="text:N"),
            alt.Chart(alt.NamedData(name="rl_ceiling_labels_compute"), name="ceiling_labels_compute")
            .mark_text(align="right", dx=-4, **text_style)
            .encode(x=x_enc, y=y_enc, text="text:N"),
        ]
        datasets |= {
            "rl_ceilings": _values(lines.drop("color", "dash")),
            "rl_ceiling_labels_bandwidth": _values(bw_text),
            "rl_ceiling_labels_compute": _values(comp_text),
        }

    multi = level == "all"
    # one explicit colour per trajectory: every layer draws the same mapping (their scales are independent of
    # the roofs' colour scale), the legend is drawn once (lines)
    domain_traj = (
        pts.unique("traj_id", maintain_order=True).get_column("trajectory").unique(maintain_order=True)
    )
    palette = _TABLEAU10 if domain_traj.len() <= 10 else _TABLEAU20
    traj_scale = alt.Scale(
        domain=domain_traj.to_list(), range=[palette[i % len(palette)] for i in range(domain_traj.len())]
    )
    kinds = set(pts.get_column("entity_kind").drop_nulls())
    kind_title = {frozenset({"layer"}): "Layer", frozenset({"kernel"}): "Kernel"}.get(
        frozenset(kinds), "Trajectory"
    )

    def color(legend: bool) -> alt.Color:
        return alt.Color(
            "trajectory:N",
            title=kind_title,
            scale=traj_scale,
            legend=alt.Legend(orient="right", labelLimit=300, symbolLimit=30) if legend else None,
        )

    line_enc: dict[str, Any] = {
        "x": x_enc,
        "y": y_enc,
        "color": color(True),
        "detail": "traj_id:N",
        # Vega-Lite sorts a line by one order field only (a list falls back to x): seq = rank in (step, run_id)
        "order": alt.Order("seq:Q"),
    }
    if multi:
        line_enc["strokeDash"] = alt.StrokeDash(
            "level:N",
            scale=alt.Scale(domain=list(_LEVEL_DASH), range=list(_LEVEL_DASH.values())),
            legend=None,  # the shape legend names the levels; the subtitle the line styles
        )
    tooltip = [
        alt.Tooltip("trajectory:N", title="trajectory"),
        alt.Tooltip("entity:N", title="identity"),
        alt.Tooltip("series:N", title="other labels"),
        alt.Tooltip("value:N", title=vary),
        alt.Tooltip("step:Q", title="step"),
        alt.Tooltip("level:N", title="level"),
        alt.Tooltip("ai:Q", title="AI (FLOP/byte)", format=".4~g"),
        alt.Tooltip("flops_per_s:Q", title="FLOP/s", format=".4~s"),
        alt.Tooltip("flops:Q", title="FLOP", format=".4~s"),
        alt.Tooltip("bytes:Q", title="bytes", format=".4~s"),
        alt.Tooltip("time_ns:Q", title="time (ns)", format=",.0f"),
        alt.Tooltip("precision:N", title="precision"),
        alt.Tooltip("attainable_flops_per_s:Q", title="attainable at level (FLOP/s)", format=".4~s"),
        alt.Tooltip("above_roof:N", title="above its roof"),
        alt.Tooltip("flags:N", title="flags"),
        alt.Tooltip("run_id:N", title="run"),
    ]
    point_enc: dict[str, Any] = {
        "x": x_enc,
        "y": y_enc,
        "color": color(False),
        **flag_outline(),
        "tooltip": tooltip,
    }
    if multi:
        point_enc["shape"] = alt.Shape(
            "level:N",
            title="Level",
            scale=alt.Scale(domain=list(_LEVEL_SHAPE), range=list(_LEVEL_SHAPE.values())),
        )
    points_data = alt.NamedData(name="rl_traj_points")
    layers += [
        alt.Chart(points_data, name="lines").mark_line(strokeWidth=2, opacity=0.8).encode(**line_enc),
        alt.Chart(alt.NamedData(name="rl_traj_arrows"), name="arrows")
        .mark_point(shape=ARROW_SHAPE, filled=True, opacity=1.0)
        .encode(
            x=x_enc,
            y=y_enc,
            angle=alt.Angle("angle:Q", scale=None),
            size=alt.Size("size:Q", scale=None),
            color=color(False),
            tooltip=[
                alt.Tooltip("trajectory:N", title="trajectory"),
                alt.Tooltip("from_value:N", title=f"from {vary}"),
                alt.Tooltip("to_value:N", title=f"to {vary}"),
                alt.Tooltip("ai_change:Q", title="AI x", format=".3~g"),
                alt.Tooltip("flops_change:Q", title="FLOP/s x", format=".3~g"),
            ],
        ),
        alt.Chart(points_data, name="points")
        .mark_point(filled=True, size=70, opacity=1.0, shape="circle")
        .encode(**point_enc),
        alt.Chart(alt.NamedData(name="rl_traj_values"), name="values")
        .mark_text(align="left", baseline="bottom", dx=6, dy=-4, fontSize=10)
        .encode(x=x_enc, y=y_enc, text="text:N", color=color(False)),
    ]
    datasets |= {
        "rl_traj_points": _values(pts.drop("labels", strict=False)),
        "rl_traj_arrows": _values(arrows),
        "rl_traj_values": _values(value_labels),
    }

    # subtitle: what is drawn, the order, and what is not (never silently)
    n_entities = pts.select(pl.struct("series", "entity_kind", "entity").n_unique()).item()
    n_series = pts.get_column("series").n_unique()
    order = pts.get_column("value_order").drop_nulls().unique().to_list()
    order_text = f" ({order[0]} order)" if len(order) == 1 else ""
    subtitle = [
        f"{level_text}: {n_entities} trajector{'y' if n_entities == 1 else 'ies'} over {vary} = "
        f"{_sweep_text(pts)}{order_text}; arrows point to the next {vary}"
        + (f"; {n_series} series (other labels)" if n_series > 1 else "")
    ]
    if multi:
        subtitle.append("Lines: L1 dotted (▲), L2 dashed (■), DRAM solid (●)")
    if n_left_out:
        subtitle.append(
            f"Not drawn: {n_left_out} point(s) without FLOPs, bytes at the level or a usable time "
            "(no place on a log-log roofline)"
        )
    n_flagged = pts.filter(pl.col("flagged")).height
    if n_flagged:
        subtitle.append(f"Red outline: above its roof or flagged by ingest ({n_flagged} point(s))")
    if ceil_note:
        subtitle.append(ceil_note)
    if missing:
        subtitle.append("No valid ceiling in these runs for: " + ", ".join(missing))
    if title is None:
        title = f"Roofline trajectories as {vary} varies"

    return alt.LayerChart(
        layer=layers,
        resolve=alt.Resolve(
            scale=alt.ScaleResolveMap(color="independent", shape="independent", strokeDash="independent")
        ),
        width=_WIDTH,
        height=_HEIGHT,
        title=alt.TitleParams(text=title, subtitle=subtitle, anchor="start", subtitleColor="#555555"),
        datasets=datasets,
    )
