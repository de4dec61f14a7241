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

Saving is in :mod:`rooflake.render.save`; the rows drawn and the zero-FLOP table in :mod:`rooflake.render.tables`;
the axes, roofs and markers shared with the other charts in :mod:`rooflake.render.axes`,
:mod:`rooflake.render.roofs` and :mod:`rooflake.render.marks`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from rooflake.render.axes import ai_x, flops_y, roofline_ai_range, roofline_y_range
from rooflake.render.formats import ChartTitle, runs_said, share
from rooflake.render.inputs import POINT_OPTIONAL, POINT_REQUIRED, Table, ceiling_rows, conform, frame, values
from rooflake.render.marks import LEVEL_ORDER, LEVEL_SHAPE, flag_outline, level_shape
from rooflake.render.roofs import (
    PRECISION_CEILINGS,
    ceiling_lines,
    ceiling_text,
    overlay_lines,
    overlay_roofs,
    pick_ceilings,
    point_roofs,
    roof_charts,
    split_overlay,
    wanted_compute,
)
from rooflake.render.rows import (
    HEIGHT,
    KERNEL_LEGEND,
    LEVELS,
    LINK_MARK,
    POINT_MARK,
    POINT_TOOLTIP,
    PRECISIONS,
    ROOF_LEGEND,
    ROOF_TOOLTIP,
    WIDTH,
    Drawing,
    drawing,
    level_text,
    prec_text,
    roof_parts,
    scheme,
    spec,
)
from rooflake.render.tables import has_flops, kernel_keys, level_points, select_rows, zero_flop_table
from rooflake.schema import RooflineDataError

if TYPE_CHECKING:  # Altair is imported where a chart object is built
    import altair as alt

__all__ = ["LEVELS", "PRECISIONS", "roofline_chart", "roofline_spec"]


def _tooltips(tips: list[tuple[str, str, str | None]]) -> list[alt.Tooltip]:
    import altair as alt

    return [alt.Tooltip(f, title=t, format=fmt or alt.Undefined) for f, t, fmt in tips]


def roofline_chart(
    points: Table,
    ceilings: Table,
    *,
    level: str = "dram",
    precision: str = "all",
    title: ChartTitle = None,
    noun: str = "kernel",
) -> alt.LayerChart:
    """The hierarchical roofline of one run: kernels as points under the machine's roofs, log-log.

    ``points`` (pyarrow.Table or polars.DataFrame): ``kernel_roofline`` rows, one per kernel x precision. Used:
    ``run_id``, ``kernel_id``, ``name`` (shown cut to 80 characters), ``precision`` (fp64|fp32|fp16|tensor),
    ``duration_ns`` (ns), ``flops`` (FLOP), ``ai_<level>`` (FLOP/byte), ``achieved_flops_per_s`` (FLOP/s); when
    present ``short_name``, ``nvtx_path``, ``is_dominant``, ``bytes_<level>`` (byte), ``attainable_<level>``,
    ``attainable_flops_per_s`` (FLOP/s), ``fraction_of_roof``, ``zero_flops``, ``bound``, ``above_roof``,
    ``flags`` (list[str]), ``peak_ceiling`` (the ceiling of the row's compute roof).
    ``ceilings``: ``run_ceilings`` rows of ONE run: ``ceiling``, ``kind`` (bandwidth|compute), ``value`` (byte/s
    or FLOP/s; null/NaN: not drawn); when present ``label`` (the roof's name), ``source``, ``value_min``,
    ``value_max``, ``formula``, ``n_kernels``, ``n_invalid``, ``machine_key``, ``source_label`` (legend text),
    ``overlay`` (another source's roof: drawn dashed beside; :func:`rooflake.views.ceilings.run_roofs`).
    ``level``: dram, l2, l1, or all (one marker per level: L1 ▲, L2 ■, DRAM ●). ``precision``: fp64, fp32, fp16,
    tensor, or all (each kernel's dominant precision). ``noun``: what one point is in the legend and the subtitle
    (kernel, or layer for the rows of NVTX layers).

    Drawn (sources in the module docstring): x = AI_l = F / Q_l, y = achieved FLOP/s; one point per kernel (per
    level with ``all``) whose FLOPs, AI and FLOP/s are > 0, red-outlined when above its roof or flagged;
    zero-FLOP kernels are left to :func:`zero_flop_table` and, with those lacking bytes or a duration, counted in
    the subtitle. Roofs (:mod:`rooflake.render.roofs`): the level's bandwidth, y = min(W x, P), and the compute
    roofs of the points' ``peak_ceiling`` (else of their precision), in the legend with value and source.

    Layers: ``ceilings``, ``ceiling_labels_bandwidth``/``_compute``, ``links`` (level all: joins a kernel's
    points), ``points``; datasets ``rl_ceilings``, ``rl_ceiling_labels_*``, ``rl_points`` (``ai``, ``level``, ...).

    Raises:
        ValueError: unknown ``level`` / ``precision``, a required column missing, ceilings of several runs.
        TypeError: an input that is neither a pyarrow.Table nor a polars.DataFrame.
        RooflineDataError: no point can be drawn (every selected row lacks FLOPs, bytes at the level or a
            usable duration); the message says what is missing and how to collect it.
    """
    d = _drawing(points, ceilings, level, precision, title, noun)
    layers, datasets = _layers(d)
    return _layer_chart(layers, datasets, d)


def roofline_spec(
    points: Table,
    ceilings: Table,
    *,
    level: str = "dram",
    precision: str = "all",
    title: ChartTitle = None,
) -> dict[str, Any]:
    """The Vega-Lite spec of :func:`roofline_chart` (the same arguments, rows and errors), built as a dict without
    Altair (:func:`rooflake.render.rows.spec`): the dict :func:`rooflake.render.spec_dict` gives of that chart, the
    same keys in the same order; :class:`rooflake.schema.duck.Rows` input is drawn in Python where
    :func:`rooflake.render.rows.drawing` can (tests/test_png_spec.py checks both on every fixture run, level and
    precision)."""
    return spec(
        drawing(points, ceilings, level, precision, title)
        or _drawing(points, ceilings, level, precision, title)
    )


def _drawing(
    points: Table, ceilings: Table, level: str, precision: str, title: ChartTitle, noun: str = "kernel"
) -> Drawing:
    """The points, roofs, axes and title lines of a roofline chart (:func:`roofline_chart`), which raises."""
    levels = _levels(level, precision)
    pts = conform(
        frame(points, "points"),
        POINT_REQUIRED + tuple(f"ai_{lv}" for lv in levels),
        POINT_OPTIONAL,
        "points (kernel_roofline rows)",
    )
    ceil, others = split_overlay(ceiling_rows(ceilings))
    rows = select_rows(pts, precision)
    long, reasons = level_points(rows, levels)
    if long.height == 0:
        raise _nothing_drawn(pts, rows, reasons, level, precision)
    with_flops = rows.filter(has_flops())
    wanted = wanted_compute(with_flops, _drawn(long, precision))
    bw, comp, missing = pick_ceilings(ceil, levels, wanted, point_roofs(with_flops))
    extra = overlay_roofs(others, levels, wanted)
    x, y, lines, texts = _geometry(long, (bw, comp, extra))
    subtitle = _subtitle(pts, rows, long, reasons, level, precision, noun)
    if missing:
        subtitle.append("No valid ceiling in this run for: " + ", ".join(missing))
    subtitle += _sources_line(ceil, others)
    text = title if title is not None else _default_title(ceil)
    return Drawing(
        values(long),
        level_text(level),
        level == "all",
        x,
        y,
        lines.to_dicts(),
        texts.to_dicts(),
        text,
        subtitle,
        noun,
    )


def _sources_line(ceil: pl.DataFrame, others: pl.DataFrame) -> list[str]:
    """The subtitle line naming the roofs' source (where the rows say it) and the sources overlaid dashed."""
    own = ceil.get_column("source").drop_nulls().unique(maintain_order=True).to_list()
    more = others.get_column("source").drop_nulls().unique(maintain_order=True).to_list()
    if not own and not more:
        return []
    line = f"Roofs: {', '.join(own) or 'none'}"
    return [line + (f"; dashed: {', '.join(more)}" if more else "")]


def _default_title(ceil: pl.DataFrame) -> str:
    """The default title: "Hierarchical roofline · <machine>" when the ceilings are of one machine."""
    keys = ceil.get_column("machine_key").drop_nulls().unique().to_list()
    return "Hierarchical roofline" + (f" · {keys[0]}" if len(keys) == 1 else "")


def _layer_chart(layers: list[alt.Chart], datasets: dict[str, Any], d: Drawing) -> alt.LayerChart:
    """The chart in one call, without Altair's copies (:mod:`rooflake.render.compose`); colour, shape and dash
    scales independent per layer (roofs, kernels, levels)."""
    import altair as alt

    from rooflake.render.compose import layer_chart

    return layer_chart(
        layers,
        resolve=alt.Resolve(
            scale=alt.ScaleResolveMap(color="independent", shape="independent", strokeDash="independent")
        ),
        width=WIDTH,
        height=HEIGHT,
        title=alt.TitleParams(text=d.title, subtitle=d.subtitle, anchor="start", subtitleColor="#555555"),
        datasets=datasets,
    )


def _levels(level: str, precision: str) -> list[str]:
    """The levels drawn for ``level`` (l1, l2, dram for ``all``); ``ValueError`` for a bad level or precision."""
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r} (choose one of: {', '.join(LEVELS)})")
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r} (choose one of: {', '.join(PRECISIONS)})")
    return list(LEVEL_ORDER) if level == "all" else [level]


def _drawn(long: pl.DataFrame, precision: str) -> list[str]:
    """The precisions of the points drawn, in the order fp64, fp32, fp16, tensor (others after, sorted)."""
    if precision != "all":
        return [precision]
    known = list(PRECISION_CEILINGS)
    found = set(long.get_column("precision").to_list())
    return sorted(found, key=lambda p: (known.index(p) if p in known else len(known), p))


def _left_out(pts: pl.DataFrame, rows: pl.DataFrame) -> tuple[set[Any], set[Any]]:
    """(kernels without FLOPs at all, kernels without FLOPs in the selected precision that have them in
    another), as (run_id, kernel_id) sets."""
    zero_keys = kernel_keys(zero_flop_table(pts))
    no_prec_flops = (kernel_keys(pts) - kernel_keys(rows.filter(has_flops()))) - zero_keys
    return zero_keys, no_prec_flops


def _nothing_drawn(
    pts: pl.DataFrame, rows: pl.DataFrame, reasons: list[tuple[str, int, str]], level: str, precision: str
) -> RooflineDataError:
    """The error when no point can be drawn: how many kernels lack what, and how to collect it."""
    all_keys = kernel_keys(pts)
    zero_keys, no_prec_flops = _left_out(pts, rows)
    parts = [f"{n} {text}" for what, n, text in reasons if what != "flops"]
    if zero_keys:
        parts.insert(0, f"{len(zero_keys)} have no FLOPs at all (zero or not counted)")
    if no_prec_flops:
        parts.insert(0, f"{len(no_prec_flops)} have no {precision} FLOPs")
    found = pts.filter(has_flops()).get_column("precision").unique().sort().to_list() if pts.height else []
    hint = f" (FLOPs were counted in: {', '.join(found)})" if found and precision != "all" else ""
    return RooflineDataError(
        f"{runs_said({str(r) for r, _ in all_keys})}no kernel can be drawn on the {level_text(level)} roofline "
        f"({prec_text(precision)}): "
        f"of {len(all_keys)} kernel(s), {'; '.join(parts) or 'none has roofline rows'}{hint}. "
        "A roofline needs FLOP counts, bytes at the level and a duration: "
        "profile with `ncu --set roofline` (or the SpeedOfLight_Hierarchical*RooflineChart sections), "
        "or choose another level or precision"
    )


def _geometry(
    long: pl.DataFrame, roofs: tuple[pl.DataFrame, pl.DataFrame, list[Any]]
) -> tuple[tuple[float, float], tuple[float, float], pl.DataFrame, pl.DataFrame]:
    """(x range, y range, roof lines, roof labels): axes that cover the points, the roofs and their ridge points
    (``roofs``: bandwidth and compute rows of the points' source, and (bandwidth, compute) of each source overlaid
    dashed)."""
    bw, comp, extra = roofs
    ridges = [float(p) / float(w) for b, c in [(bw, comp), *extra] for p in c["value"] for w in b["value"]]
    x = roofline_ai_range(long.get_column("ai").to_list(), ridges)
    own = ceiling_lines(bw, comp, *x)
    lines = pl.concat([own, overlay_lines(extra, *x, own.height and int(own["order"].max()) + 1, comp)])  # type: ignore[arg-type]
    y = roofline_y_range(
        lines.get_column("flops_per_s").to_list() + long.get_column("achieved_flops_per_s").to_list()
    )
    return x, y, lines, ceiling_text(own, x, y, WIDTH, HEIGHT)


def _layers(d: Drawing) -> tuple[list[alt.Chart], dict[str, Any]]:
    """Roof layers, then the points (and with several levels the links between a kernel's points)."""
    import altair as alt

    x_enc = ai_x(d.level_text, *d.x)
    parts = roof_parts(d.lines, d.texts)
    roof_y = flops_y("flops_per_s", *d.y)
    layers, datasets = roof_charts(
        parts, x_enc, roof_y, _tooltips(ROOF_TOOLTIP), alt.Legend(**ROOF_LEGEND), clip=False
    )
    y_enc = flops_y("achieved_flops_per_s", *d.y)
    points_data = alt.NamedData(name="rl_points")
    if d.multi:
        layers.append(
            alt.Chart(points_data, name="links")
            .mark_line(**LINK_MARK)
            .encode(x=x_enc, y=y_enc, detail=alt.Detail(["run_id:N", "kernel_id:Q"]), order=alt.Order("ai:Q"))
        )
    point_enc: dict[str, Any] = {
        "x": x_enc,
        "y": y_enc,
        "color": alt.Color(
            "kernel:N",
            title=d.noun.capitalize(),
            scale=alt.Scale(scheme=scheme(d.long)),
            legend=alt.Legend(**KERNEL_LEGEND),
        ),
        **flag_outline(),
        "tooltip": _tooltips(POINT_TOOLTIP),
    }
    if d.multi:
        point_enc["shape"] = level_shape(legend=alt.Legend(orient="right"))
    layers.append(alt.Chart(points_data, name="points").mark_point(**POINT_MARK).encode(**point_enc))
    return layers, {**datasets, "rl_points": d.long}


def _subtitle(
    pts: pl.DataFrame,
    rows: pl.DataFrame,
    long: pl.DataFrame,
    reasons: list[tuple[str, int, str]],
    level: str,
    precision: str,
    noun: str = "kernel",
) -> list[str]:
    """What is drawn and what is not (never silently): counts of kernels (``noun``: or layers) left out and why,
    the red outlines."""
    zero_keys, no_prec_flops = _left_out(pts, rows)
    n_pts = long.select(pl.struct("run_id", "kernel_id").n_unique()).item()
    subtitle = [f"{level_text(level)} roofline, {prec_text(precision, noun)}: {n_pts} {noun}(s) drawn"]
    not_drawn = [f"{len(no_prec_flops)} {noun}(s) have no {precision} FLOPs"] if no_prec_flops else []
    not_drawn += [f"{n} {noun}(s) {text}" for what, n, text in reasons if what == "time"]
    if not_drawn:
        subtitle.append("Not drawn: " + "; ".join(not_drawn))
    for what, n, text in reasons:
        if what in LEVEL_SHAPE:
            subtitle.append(
                f"{'No ' + what + ' point' if level == 'all' else 'Not drawn'}: {n} {noun}(s) {text}"
            )
    if zero_keys:
        zero = zero_flop_table(pts)
        total = float(zero.unique("run_id").get_column("total_share_of_time").sum())
        subtitle.append(f"{zero.height} {noun}(s) without FLOPs ({share(total)} of time) listed apart")
    n_flagged = long.filter(pl.col("flagged")).select(pl.struct("run_id", "kernel_id").n_unique()).item()
    if n_flagged:
        subtitle.append(f"Red outline: above its roof or flagged by ingest ({n_flagged} {noun}(s))")
    return subtitle
