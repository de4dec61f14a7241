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

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import polars as pl

from rooflake.render.axes import ai_x, ai_x_spec, flops_y, flops_y_spec, roofline_ai_range, roofline_y_range
from rooflake.render.formats import share
from rooflake.render.inputs import POINT_OPTIONAL, POINT_REQUIRED, Table, ceiling_rows, conform, frame, values
from rooflake.render.marks import (
    LEVEL_LABEL,
    LEVEL_ORDER,
    LEVEL_SHAPE,
    flag_outline,
    flag_outline_spec,
    level_shape,
    level_shape_spec,
)
from rooflake.render.roofs import (
    PRECISION_CEILINGS,
    ceiling_lines,
    ceiling_text,
    layer_spec,
    mark_spec,
    overlay_lines,
    overlay_roofs,
    pick_ceilings,
    point_roofs,
    roof_layers,
    roof_layers_spec,
    split_overlay,
    wanted_compute,
)
from rooflake.render.tables import has_flops, kernel_keys, level_points, select_rows, zero_flop_table
from rooflake.schema import RooflineDataError

if TYPE_CHECKING:  # Altair is imported where a chart object is built: roofline_spec needs none (issue 14)
    import altair as alt

__all__ = ["LEVELS", "PRECISIONS", "SCHEMA_URL", "roofline_chart", "roofline_spec", "save_roofline"]

#: ``level`` arguments of :func:`roofline_chart` (``all`` draws the three levels at once).
LEVELS = ("dram", "l2", "l1", "all")
#: ``precision`` arguments of :func:`roofline_chart` (``all`` = each kernel's dominant precision).
PRECISIONS = ("fp64", "fp32", "fp16", "tensor", "all")
#: What Altair puts into every spec it writes: ``alt.SCHEMA_URL`` of the installed Altair and its default theme's
#: ``config`` (:func:`roofline_spec` writes them without importing Altair; tests/test_png_spec.py checks them).
SCHEMA_URL = "https://vega.github.io/schema/vega-lite/v6.4.1.json"
THEME_CONFIG: dict[str, Any] = {"view": {"continuousWidth": 300, "continuousHeight": 300}}

WIDTH, HEIGHT = 640, 420

_TYPES = {"N": "nominal", "Q": "quantitative", "O": "ordinal"}
#: tooltips as (field:type, title, d3 format or None)
_ROOF_TOOLTIP = [
    ("label:N", "ceiling", None),
    ("formula:N", "formula", None),
    ("value_min:Q", "min over launches", ".3~s"),
    ("value_max:Q", "max over launches", ".3~s"),
    ("n_kernels:Q", "launches with a valid peak", None),
    ("n_invalid:Q", "launches with NaN/0 peak", None),
]
_POINT_TOOLTIP = [
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
_ROOF_LEGEND: dict[str, Any] = {
    "orient": "right",
    "labelLimit": 320,
    "symbolType": "stroke",
    "symbolStrokeWidth": 2,
}
_KERNEL_LEGEND: dict[str, Any] = {"orient": "right", "labelLimit": 260, "symbolLimit": 20}
_POINT_MARK: dict[str, Any] = {"filled": True, "size": 110, "opacity": 0.9, "shape": "circle"}
_LINK_MARK: dict[str, Any] = {"strokeWidth": 1, "opacity": 0.5, "color": "#888888"}
_RESOLVE = {"color": "independent", "shape": "independent", "strokeDash": "independent"}


def _tooltips(tips: list[tuple[str, str, str | None]]) -> list[alt.Tooltip]:
    import altair as alt

    return [alt.Tooltip(f, title=t, format=fmt or alt.Undefined) for f, t, fmt in tips]


def _tooltips_spec(tips: list[tuple[str, str, str | None]]) -> list[dict[str, Any]]:
    """:func:`_tooltips` as the dicts Altair's ``to_dict`` gives of them (keys in name order)."""
    out = []
    for f, t, fmt in tips:
        field, kind = f.rsplit(":", 1)
        out.append({"field": field, **({"format": fmt} if fmt else {}), "title": t, "type": _TYPES[kind]})
    return out


class _Drawing(NamedTuple):
    """What a roofline chart draws, before it is an Altair chart or a dict: the points (``long``, one row per
    kernel x level), the axes' ranges (FLOP/byte, FLOP/s), the roof lines and their labels, the title lines."""

    long: pl.DataFrame
    level_text: str
    multi: bool
    x: tuple[float, float]
    y: tuple[float, float]
    lines: pl.DataFrame
    texts: pl.DataFrame
    title: str
    subtitle: list[str]


def roofline_chart(
    points: Table,
    ceilings: Table,
    *,
    level: str = "dram",
    precision: str = "all",
    title: str | None = None,
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
    tensor, or all (each kernel's dominant precision).

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
    d = _drawing(points, ceilings, level, precision, title)
    layers, datasets = _layers(d)
    return _layer_chart(layers, datasets, d)


def roofline_spec(
    points: Table,
    ceilings: Table,
    *,
    level: str = "dram",
    precision: str = "all",
    title: str | None = None,
) -> dict[str, Any]:
    """The Vega-Lite spec of :func:`roofline_chart` (the same arguments, rows and errors), built as a dict without
    importing Altair (0.2 s of CPU of ``rl roofline RUN -o x.png``; issue 14): the dict
    :func:`rooflake.render.spec_dict` gives of that chart, the same keys in the same order (Altair's default
    theme's config, :data:`SCHEMA_URL`), which tests/test_png_spec.py checks on every fixture run, level and
    precision."""
    d = _drawing(points, ceilings, level, precision, title)
    layers, datasets = _layers_spec(d)
    return {
        "config": THEME_CONFIG,
        "layer": layers,
        "resolve": {"scale": _RESOLVE},
        "width": WIDTH,
        "height": HEIGHT,
        "title": {"text": d.title, "anchor": "start", "subtitle": d.subtitle, "subtitleColor": "#555555"},
        "datasets": datasets,
        "$schema": SCHEMA_URL,
    }


def save_roofline(
    points: Table,
    ceilings: Table,
    path: str | os.PathLike[str],
    *,
    below: pl.DataFrame | None = None,
    level: str = "dram",
    precision: str = "all",
    title: str | None = None,
) -> None:
    """Draw the roofline chart and write it to ``path``: what ``save_chart(roofline_chart(points, ceilings, ...),
    path, below=below)`` writes (:func:`rooflake.render.save.save_chart`: suffix, ``below`` table, errors). A PNG
    (scale 2) or SVG without a ``below`` row is rendered from :func:`roofline_spec`, the same spec, without
    importing Altair (issue 14; tests/test_png_spec.py compares the files); the rest goes through ``save_chart``.
    Raises as :func:`roofline_chart` and ``save_chart``."""
    fmt = {".png": "png", ".svg": "svg"}.get(Path(path).suffix.lower())
    args: dict[str, Any] = {"level": level, "precision": precision, "title": title}
    if fmt is None or (below is not None and below.height > 0):
        from rooflake.render.save import save_chart

        save_chart(roofline_chart(points, ceilings, **args), path, below=below)
        return
    from rooflake.render import engine

    spec_json = json.dumps(roofline_spec(points, ceilings, **args), allow_nan=False)  # as save_chart dumps it
    scale = 2.0 if fmt == "png" else 1.0  # save_chart's scales
    engine.submit(engine.render_files, spec_json, [(str(path), fmt, scale)]).result()


def _drawing(points: Table, ceilings: Table, level: str, precision: str, title: str | None) -> _Drawing:
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
    subtitle = _subtitle(pts, rows, long, reasons, level, precision)
    if missing:
        subtitle.append("No valid ceiling in this run for: " + ", ".join(missing))
    subtitle += _sources_line(ceil, others)
    text = title if title is not None else _default_title(ceil)
    return _Drawing(long, _level_text(level), level == "all", x, y, lines, texts, text, subtitle)


def _sources_line(ceil: pl.DataFrame, others: pl.DataFrame) -> list[str]:
    """The subtitle line naming the roofs' source (where the rows say it) and the sources overlaid dashed."""
    own = ceil.get_column("source").drop_nulls().unique(maintain_order=True).to_list()
    more = others.get_column("source").drop_nulls().unique(maintain_order=True).to_list()
    if not own and not more:
        return []
    line = f"Roofs: {', '.join(own) or 'none'}"
    return [line + (f"; dashed: {', '.join(more)}" if more else "")]


def _default_title(ceil: pl.DataFrame) -> str:
    """ "Hierarchical roofline · <machine>" when the ceilings are of one machine."""
    keys = ceil.get_column("machine_key").drop_nulls().unique().to_list()
    return "Hierarchical roofline" + (f" · {keys[0]}" if len(keys) == 1 else "")


def _layer_chart(layers: list[alt.Chart], datasets: dict[str, Any], d: _Drawing) -> alt.LayerChart:
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


def _level_text(level: str) -> str:
    return "L1, L2 and DRAM" if level == "all" else LEVEL_LABEL[level]


def _prec_text(precision: str) -> str:
    return "each kernel's dominant precision" if precision == "all" else precision


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
    run_ids = ", ".join(sorted({str(r) for r, _ in all_keys})) or "?"
    parts = [f"{n} {text}" for what, n, text in reasons if what != "flops"]
    if zero_keys:
        parts.insert(0, f"{len(zero_keys)} have no FLOPs at all (zero or not counted)")
    if no_prec_flops:
        parts.insert(0, f"{len(no_prec_flops)} have no {precision} FLOPs")
    found = pts.filter(has_flops()).get_column("precision").unique().sort().to_list() if pts.height else []
    hint = f" (FLOPs were counted in: {', '.join(found)})" if found and precision != "all" else ""
    return RooflineDataError(
        f"run {run_ids}: no kernel can be drawn on the {_level_text(level)} roofline ({_prec_text(precision)}): "
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


def _scheme(long: pl.DataFrame) -> Literal["tableau10", "tableau20"]:
    return "tableau10" if long.get_column("kernel").n_unique() <= 10 else "tableau20"


def _layers(d: _Drawing) -> tuple[list[alt.Chart], dict[str, Any]]:
    """Roof layers, then the points (and with several levels the links between a kernel's points)."""
    import altair as alt

    x_enc = ai_x(d.level_text, *d.x)
    layers, datasets = roof_layers(
        d.lines,
        d.texts,
        x_enc,
        flops_y("flops_per_s", *d.y),
        _tooltips(_ROOF_TOOLTIP),
        alt.Legend(**_ROOF_LEGEND),
    )
    y_enc = flops_y("achieved_flops_per_s", *d.y)
    points_data = alt.NamedData(name="rl_points")
    if d.multi:
        layers.append(
            alt.Chart(points_data, name="links")
            .mark_line(**_LINK_MARK)
            .encode(x=x_enc, y=y_enc, detail=alt.Detail(["run_id:N", "kernel_id:Q"]), order=alt.Order("ai:Q"))
        )
    point_enc: dict[str, Any] = {
        "x": x_enc,
        "y": y_enc,
        "color": alt.Color(
            "kernel:N",
            title="Kernel",
            scale=alt.Scale(scheme=_scheme(d.long)),
            legend=alt.Legend(**_KERNEL_LEGEND),
        ),
        **flag_outline(),
        "tooltip": _tooltips(_POINT_TOOLTIP),
    }
    if d.multi:
        point_enc["shape"] = level_shape(legend=alt.Legend(orient="right"))
    layers.append(alt.Chart(points_data, name="points").mark_point(**_POINT_MARK).encode(**point_enc))
    return layers, {**datasets, "rl_points": values(d.long)}


def _layers_spec(d: _Drawing) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """:func:`_layers` as the dicts Altair's ``to_dict`` gives of them, without Altair."""
    x_enc = ai_x_spec(d.level_text, *d.x)
    legend = dict(sorted(_ROOF_LEGEND.items()))
    tips = _tooltips_spec(_ROOF_TOOLTIP)
    layers, datasets = roof_layers_spec(
        d.lines, d.texts, x_enc, flops_y_spec("flops_per_s", *d.y), tips, legend
    )
    y_enc = flops_y_spec("achieved_flops_per_s", *d.y)
    if d.multi:
        detail = [{"field": "run_id", "type": "nominal"}, {"field": "kernel_id", "type": "quantitative"}]
        order = {"field": "ai", "type": "quantitative"}
        links = {"x": x_enc, "y": y_enc, "detail": detail, "order": order}
        layers.append(layer_spec("rl_points", mark_spec("line", **_LINK_MARK), links, "links"))
    color = {"field": "kernel", "legend": dict(sorted(_KERNEL_LEGEND.items()))}
    color |= {"scale": {"scheme": _scheme(d.long)}, "title": "Kernel", "type": "nominal"}
    point_enc = {"x": x_enc, "y": y_enc, "color": color, **flag_outline_spec()}
    point_enc["tooltip"] = _tooltips_spec(_POINT_TOOLTIP)
    if d.multi:
        point_enc["shape"] = level_shape_spec({"orient": "right"})
    layers.append(layer_spec("rl_points", mark_spec("point", **_POINT_MARK), point_enc, "points"))
    return layers, {**datasets, "rl_points": values(d.long)}


def _subtitle(
    pts: pl.DataFrame,
    rows: pl.DataFrame,
    long: pl.DataFrame,
    reasons: list[tuple[str, int, str]],
    level: str,
    precision: str,
) -> list[str]:
    """What is drawn and what is not (never silently): counts of kernels left out and why, the red outlines."""
    zero_keys, no_prec_flops = _left_out(pts, rows)
    n_pts = long.select(pl.struct("run_id", "kernel_id").n_unique()).item()
    subtitle = [f"{_level_text(level)} roofline, {_prec_text(precision)}: {n_pts} kernel(s) drawn"]
    not_drawn = [f"{len(no_prec_flops)} kernel(s) have no {precision} FLOPs"] if no_prec_flops else []
    not_drawn += [f"{n} kernel(s) {text}" for what, n, text in reasons if what == "time"]
    if not_drawn:
        subtitle.append("Not drawn: " + "; ".join(not_drawn))
    for what, n, text in reasons:
        if what in LEVEL_SHAPE:
            subtitle.append(
                f"{'No ' + what + ' point' if level == 'all' else 'Not drawn'}: {n} kernel(s) {text}"
            )
    if zero_keys:
        zero = zero_flop_table(pts)
        total = float(zero.unique("run_id").get_column("total_share_of_time").sum())
        subtitle.append(f"{zero.height} kernel(s) without FLOPs ({share(total)} of time) listed apart")
    n_flagged = long.filter(pl.col("flagged")).select(pl.struct("run_id", "kernel_id").n_unique()).item()
    if n_flagged:
        subtitle.append(f"Red outline: above its roof or flagged by ingest ({n_flagged} kernel(s))")
    return subtitle
