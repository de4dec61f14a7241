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

from rooflake.render.axes import ai_x, flops_y, half_decade_range
from rooflake.render.compose import layer_chart
from rooflake.render.formats import flags_text
from rooflake.render.inputs import Table, ceiling_rows, conform, frame, positive, values
from rooflake.render.marks import (
    LEVEL_DASH,
    LEVEL_LABEL,
    LEVEL_ORDER,
    flag_outline,
    level_shape,
    level_styles_text,
)
from rooflake.render.roofs import (
    PRECISION_CEILINGS,
    ceiling_lines,
    ceiling_text,
    merge_ceilings,
    pick_ceilings,
    roof_layers,
    wanted_compute,
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
    "duration_ns": pl.Float64(),
    "attainable_flops_per_s": pl.Float64(),
    "above_roof": pl.Boolean(),
    "flags": pl.List(pl.String()),
}
# arrowhead: an SVG path in Vega's [-1, 1] symbol box, tip at +x (an equilateral 'triangle-right' rotated by an
# arbitrary angle looks the same as one rotated by +-120 degrees: its direction cannot be read)
ARROW_SHAPE = "M-1,-0.8L1,0L-1,0.8L-0.45,0Z"
_WIDTH, _HEIGHT = 640, 420
_ARROW_SIZE = 220.0  # px^2, the arrowheads' area on long segments
_ROOF_TOOLTIP = [
    alt.Tooltip("label:N", title="ceiling"),
    alt.Tooltip("formula:N", title="formula"),
    alt.Tooltip("value_min:Q", title="min over runs' launches", format=".3~s"),
    alt.Tooltip("value_max:Q", title="max over runs' launches", format=".3~s"),
]
# Vega's tableau10 / tableau20 schemes, spelled out so every layer maps a trajectory to the same colour
_TABLEAU10 = ("#4c78a8", "#f58518", "#e45756", "#72b7b2", "#54a24b", "#eeca3b", "#b279a2", "#ff9da6", "#9d755d",
              "#bab0ac")  # fmt: skip
_TABLEAU20 = ("#4c78a8", "#9ecae9", "#f58518", "#ffbf79", "#54a24b", "#88d27a", "#b79a20", "#f2cf5b", "#439894",
              "#83bcb6", "#e45756", "#ff9d98", "#79706e", "#bab0ac", "#d67195", "#fcbfd2", "#b279a2", "#d6a5c9",
              "#9e765f", "#d8b5a5")  # fmt: skip


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


def _vary_label(drawn: pl.DataFrame) -> str:
    """The label that varies along the trajectories (the rows' ``vary``), or 'value' when they do not say."""
    first = drawn.get_column("vary").drop_nulls().first() if "vary" in drawn.columns else None
    return str(first) if first else "value"


def trajectory_chart(
    rows: Table, ceilings: Table | None = None, *, level: str = "dram", title: str | None = None
) -> alt.LayerChart:
    """Roofline trajectories: each layer's or kernel's (AI, FLOP/s) points across a sweep, connected in the order
    of the varied label's value, with arrows, log-log.

    ``rows`` (pyarrow.Table or polars.DataFrame): ``trajectory`` query rows, already filtered by the caller
    (entity kind, series, layer). Used: ``series`` (the other labels, 'k=v, ...'), ``entity`` (identity across
    runs), ``level`` (l1|l2|dram), ``run_id``, ``value`` (text of the varied label), ``step`` (1..n, the order),
    ``ai`` (FLOP/byte), ``flops_per_s`` (FLOP/s); optional: ``vary``, ``label`` (short name), ``value_order``,
    ``precision`` and ``peak_ceiling`` (the compute roofs: the rows' own), ``flops``, ``bytes``, ``duration_ns``,
    ``attainable_flops_per_s``, ``above_roof`` and ``flags`` (red outline), ``nvtx_path``, ``entity_kind``.
    ``ceilings``: ``run_ceilings`` rows of the sweep's runs (one roof per ceiling: the median over the runs, min
    and max in the tooltip), or None for no roofs. ``level``: dram, l2, l1, or all (three lines per entity:
    L1 dotted with ▲, L2 dashed with ■, DRAM solid with ●).

    Drawn (Javed et al., 2019): one line per (series, entity, level), its points ordered by ``step`` (runs sharing
    a step by run id: the ``order`` encoding is ``seq``, that rank), each point labelled with the varied value;
    an arrowhead (:data:`ARROW_SHAPE`) at each segment's log-space midpoint, rotated along it. Points above their
    roof or flagged get a red outline (never dropped); points with no place on a log axis (no FLOPs, 0 bytes, NaN
    or 0 time) are left out and counted in the subtitle. Roofs as in :func:`rooflake.render.roofline_chart`.

    Layers (named): ``ceilings``, ``ceiling_labels_bandwidth``, ``ceiling_labels_compute`` (with ceilings),
    ``lines``, ``arrows``, ``points``, ``values``. Datasets: ``rl_traj_points`` (one row per drawn point:
    ``traj_id``, ``trajectory`` = legend name, ``step``, ``value``, ``ai``, ``flops_per_s``, ...),
    ``rl_traj_arrows`` (``from_step``, ``to_step``, ``from_value``, ``to_value``, ``ai``, ``flops_per_s``,
    ``angle`` in degrees clockwise from +x on screen), ``rl_traj_values`` (``text``: the value(s) at a point;
    points of one trajectory on one spot share one text, e.g. ``'8, 16, 32'``).

    Raises:
        ValueError: unknown ``level`` or a required column missing.
        TypeError: an input that is neither a pyarrow.Table nor a polars.DataFrame.
        RooflineDataError: no point can be drawn.
    """
    levels = _levels(level)
    df = conform(frame(rows, "rows"), _REQUIRED, _OPTIONAL, "rows (trajectory query rows)")
    df = df.filter(pl.col("level").is_in(levels))
    drawn = df.filter(positive("ai") & positive("flops_per_s"))
    level_text = "L1, L2 and DRAM" if level == "all" else LEVEL_LABEL[level]
    if drawn.height == 0:
        raise _nothing_drawn(df, level_text)
    vary = _vary_label(drawn)
    pts = _trajectories(drawn)
    roofs = _roofs(ceilings, pts, levels)
    layers, datasets, notes = _layers(pts, roofs, level_text, level == "all", vary)
    subtitle = _subtitle(pts, level_text, level == "all", vary, df.height - drawn.height) + notes
    head = alt.TitleParams(
        text=title or f"Roofline trajectories as {vary} varies", subtitle=subtitle, anchor="start",
        subtitleColor="#555555",
    )  # fmt: skip
    return layer_chart(
        layers,
        resolve=alt.Resolve(
            scale=alt.ScaleResolveMap(color="independent", shape="independent", strokeDash="independent")
        ),
        width=_WIDTH,
        height=_HEIGHT,
        title=head,
        datasets=datasets,
    )


def _levels(level: str) -> list[str]:
    if level not in TRAJECTORY_LEVELS:
        raise ValueError(f"unknown level {level!r} (choose one of: {', '.join(TRAJECTORY_LEVELS)})")
    return list(LEVEL_ORDER) if level == "all" else [level]


def _nothing_drawn(df: pl.DataFrame, level_text: str) -> RooflineDataError:
    return RooflineDataError(
        f"no point can be drawn on the {level_text} trajectory chart: of {df.height} row(s), none has "
        "FLOPs > 0, bytes > 0 at the level and a usable time (NaN or 0 durations, zero-FLOP kernels "
        "and missing counters have no place on a log-log roofline)"
    )


def _trajectories(drawn: pl.DataFrame) -> pl.DataFrame:
    """The drawn rows with their trajectory: ``trajectory`` (legend name: the short name when that is unique,
    with the series when there are several), ``traj_id`` (one per series, entity kind, entity and level),
    ``seq`` (rank in step, run id), level as chart name, ``flags`` as text, ``flagged``."""
    keys = ["series", "entity_kind", "entity"]
    names = drawn.unique(keys).with_columns(pl.coalesce("label", "entity").alias("_short"))
    name_col = "_short" if names.height == names.get_column("_short").n_unique() else "entity"
    series_text = pl.when(pl.col("series") == "").then(pl.lit("(no other label)")).otherwise(pl.col("series"))
    multi_series = drawn.get_column("series").n_unique() > 1
    names = names.with_columns(  # several series: the name says which
        (pl.col(name_col) + pl.lit(" · ") + series_text if multi_series else pl.col(name_col)).alias(
            "trajectory"
        )
    ).select(*keys, "trajectory")
    return (
        drawn.join(names, on=keys, how="left", nulls_equal=True)
        .with_columns(
            pl.col("level").replace_strict(LEVEL_LABEL, default=pl.col("level")).alias("level"),
            flags_text().alias("flags"),
        )
        .with_columns(pl.col("above_roof").fill_null(False))
        .with_columns((pl.col("above_roof") | (pl.col("flags") != "")).alias("flagged"))
        .with_columns(pl.struct(*keys, "level").rank("dense").cast(pl.Int64).alias("traj_id"))
        .sort("traj_id", "step", "run_id")
        .with_columns(pl.int_range(pl.len()).over("traj_id").cast(pl.Int64).alias("seq"))
    )


def _roofs(
    ceilings: Table | None, pts: pl.DataFrame, levels: list[str]
) -> tuple[pl.DataFrame | None, pl.DataFrame | None, list[str]]:
    """(bandwidth rows, compute rows, notes) of the sweep's roofs, merged over its runs (None: no ceilings).
    The notes say over how many runs (and machines) the roofs are medians, and which ceilings are missing."""
    if ceilings is None:
        return None, None, []
    merged, n_runs, n_machines, n_keys = merge_ceilings(ceiling_rows(ceilings, one_run=False))
    present = set(pts.get_column("precision").drop_nulls())
    precisions = [p for p in PRECISION_CEILINGS if p in present]
    bw, comp, missing = pick_ceilings(merged, levels, wanted_compute(pts, precisions))
    notes = []
    if n_runs > 1:
        spread = (
            f" on {n_machines} machines"
            if n_machines > 1
            else f" on one GPU at {n_keys} clocks"
            if n_keys > 1
            else ""
        )
        notes.append(
            f"Ceilings: median over {n_runs} runs{spread}"
            + (" (values differ: see the tooltip's min/max)" if spread else "")
        )
    if missing:
        notes.append("No valid ceiling in these runs for: " + ", ".join(missing))
    return bw, comp, notes


def _layers(
    pts: pl.DataFrame,
    roofs: tuple[pl.DataFrame | None, pl.DataFrame | None, list[str]],
    level_text: str,
    multi: bool,
    vary: str,
) -> tuple[list[alt.Chart], dict[str, Any], list[str]]:
    """Roof layers (when there are roofs), then the trajectories' layers; their datasets; the roofs' notes."""
    bw, comp, notes = roofs
    ridges = (
        [float(p) / float(w) for p in comp.get_column("value") for w in bw.get_column("value")]
        if bw is not None and comp is not None
        else []
    )
    x = half_decade_range(pts.get_column("ai").to_list() + ridges)
    peaks = comp.get_column("value").to_list() if comp is not None else []
    y = half_decade_range(pts.get_column("flops_per_s").to_list() + peaks)
    x_enc, y_enc = ai_x(level_text, *x), flops_y("flops_per_s", *y)
    layers: list[alt.Chart] = []
    datasets: dict[str, Any] = {}
    if bw is not None and comp is not None and (bw.height or comp.height):
        lines = ceiling_lines(bw, comp, *x)
        texts = ceiling_text(lines, x, y, _WIDTH, _HEIGHT)
        legend = alt.Legend(orient="right", labelLimit=320, symbolType="stroke")
        layers, datasets = roof_layers(lines, texts, x_enc, y_enc, _ROOF_TOOLTIP, legend)
    layers += _trajectory_layers(pts, x_enc, y_enc, multi, vary)
    datasets |= {
        "rl_traj_points": values(pts.drop("labels", strict=False)),
        "rl_traj_arrows": values(_arrows(pts, x, y)),
        "rl_traj_values": values(_value_labels(pts, x, y)),
    }
    return layers, datasets, notes


def _colors(pts: pl.DataFrame) -> tuple[alt.Color, alt.Color]:
    """The colour encoding (with its legend, without) of one explicit colour per trajectory: every layer draws
    the same mapping (their scales are independent of the roofs' colour scale); the lines draw the legend."""
    domain = pts.unique("traj_id", maintain_order=True).get_column("trajectory").unique(maintain_order=True)
    palette = _TABLEAU10 if domain.len() <= 10 else _TABLEAU20
    scale = alt.Scale(domain=domain.to_list(), range=[palette[i % len(palette)] for i in range(domain.len())])
    kinds = frozenset(pts.get_column("entity_kind").drop_nulls())
    title = {frozenset({"layer"}): "Layer", frozenset({"kernel"}): "Kernel"}.get(kinds, "Trajectory")
    legend = alt.Legend(orient="right", labelLimit=300, symbolLimit=30)
    return (
        alt.Color("trajectory:N", title=title, scale=scale, legend=legend),
        alt.Color("trajectory:N", title=title, scale=scale, legend=None),
    )


def _trajectory_layers(
    pts: pl.DataFrame, x_enc: alt.X, y_enc: alt.Y, multi: bool, vary: str
) -> list[alt.Chart]:
    """Layers ``lines``, ``arrows``, ``points``, ``values`` (datasets ``rl_traj_points``, ``_arrows``, ``_values``)."""
    with_legend, color = _colors(pts)
    line_enc: dict[str, Any] = {
        "x": x_enc,
        "y": y_enc,
        "color": with_legend,
        "detail": alt.Detail("traj_id:N"),
        # Vega-Lite sorts a line by one order field only (a list falls back to x): seq = rank in (step, run_id)
        "order": alt.Order("seq:Q"),
    }
    if multi:  # the shape legend names the levels; the subtitle the line styles
        dash = alt.Scale(domain=list(LEVEL_DASH), range=list(LEVEL_DASH.values()))
        line_enc["strokeDash"] = alt.StrokeDash("level:N", scale=dash, legend=None)
    point_enc: dict[str, Any] = {
        "x": x_enc,
        "y": y_enc,
        "color": color,
        **flag_outline(),
        "tooltip": _tooltip(vary),
    }
    if multi:
        point_enc["shape"] = level_shape()
    points_data = alt.NamedData(name="rl_traj_points")
    return [
        alt.Chart(points_data, name="lines").mark_line(strokeWidth=2, opacity=0.8).encode(**line_enc),
        alt.Chart(alt.NamedData(name="rl_traj_arrows"), name="arrows")
        .mark_point(shape=ARROW_SHAPE, filled=True, opacity=1.0)
        .encode(
            x=x_enc,
            y=y_enc,
            angle=alt.Angle("angle:Q", scale=None),
            size=alt.Size("size:Q", scale=None),
            color=color,
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
        .encode(x=x_enc, y=y_enc, text=alt.Text("text:N"), color=color),
    ]


def _tooltip(vary: str) -> list[alt.Tooltip]:
    return [
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
        alt.Tooltip("duration_ns:Q", title="time (ns)", format=",.0f"),
        alt.Tooltip("precision:N", title="precision"),
        alt.Tooltip("attainable_flops_per_s:Q", title="attainable at level (FLOP/s)", format=".4~s"),
        alt.Tooltip("above_roof:N", title="above its roof"),
        alt.Tooltip("flags:N", title="flags"),
        alt.Tooltip("run_id:N", title="run"),
    ]


def _subtitle(pts: pl.DataFrame, level_text: str, multi: bool, vary: str, n_left_out: int) -> list[str]:
    """What is drawn, the order, and what is not (never silently)."""
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
        subtitle.append(f"Lines: {level_styles_text()}")
    if n_left_out:
        subtitle.append(
            f"Not drawn: {n_left_out} point(s) without FLOPs, bytes at the level or a usable time "
            "(no place on a log-log roofline)"
        )
    n_flagged = pts.filter(pl.col("flagged")).height
    if n_flagged:
        subtitle.append(f"Red outline: above its roof or flagged by ingest ({n_flagged} point(s))")
    return subtitle
