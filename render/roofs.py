"""Roofs: which ceilings a chart draws, their sampled lines, labels, styles and layers.

A bandwidth roof of level l is y = W_l · x, a compute roof y = P; together attainable = min(P, AI · W) (Williams,
Waterman, Patterson, "Roofline", CACM 52(4), 2009), one bandwidth roof per memory level (Yang et al., "Hierarchical
Roofline analysis for GPUs", CCPE 2020), with the peaks that ``run_ceilings`` reports (ncu's ``peak_sustained`` x
the unit's clock). A roof's name comes from the data: the ceiling's ``label`` column where the query gives one
(e.g. ``TENSOR FP16→FP32``), else its ``ceiling`` name; the compute roofs drawn are the points' ``peak_ceiling``
values where the query gives them (matched to a ceiling by its ``ceiling`` or ``label``, else drawn at the points'
own ``peak_flops_per_s``: :func:`point_roofs`), else the precision's usual ceiling (:data:`PRECISION_CEILINGS`).

Sources (``--ceilings``, :func:`rooflake.views.ceilings.run_roofs`): a ceiling row's ``source_label`` (else its
``source``) names where the roof comes from in the legend (``FP32 19.5 TFLOP/s (datasheet, boost clock 1.41
GHz)``); rows with ``overlay`` true are other sources' roofs drawn dashed beside the ones the points are against
(:func:`split_overlay`, :func:`overlay_lines`). A Tensor-Core roof wanted by name (``TENSOR FP16→FP32``) that a
source names only by its source type (the datasheet's ``TENSOR FP16``) matches it, as ``rl ceilings`` pairs them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from rooflake.render.inputs import positive
from rooflake.render.marks import LEVEL_LABEL
from rooflake.render.rows import (
    BANDWIDTH_COLOR,
    LINE_COLUMNS,
    PRECISION_CEILINGS,
    TEXT_COLUMNS,
    TEXT_STYLE,
    ceiling_label,
    ceiling_line_rows,
    ceiling_style,
    ceiling_text_rows,
    roof_name,
    roof_parts,
    tensor_family,
)
from rooflake.schema import ceiling_sources

if TYPE_CHECKING:  # imported where layers are built: roof_layers_spec needs no Altair (start-up)
    import altair as alt

__all__ = [
    "BANDWIDTH_COLOR",
    "PRECISION_CEILINGS",
    "ceiling_label",
    "ceiling_lines",
    "ceiling_style",
    "ceiling_text",
    "merge_ceilings",
    "overlay_lines",
    "overlay_roofs",
    "pick_ceilings",
    "point_roofs",
    "roof_charts",
    "roof_layers",
    "roof_name",
    "split_overlay",
    "tensor_family",
    "wanted_compute",
]

#: Roofs of the other sources (``--ceilings all``): one colour per source, dashed.
SOURCE_COLOR = ceiling_sources.colors()  # the registry's colour column (rooflake.schema.ceiling_sources)
OVERLAY_DASH = [5, 3]

_POLARS = {str: pl.String(), float: pl.Float64(), int: pl.Int64(), list: pl.List(pl.Int64())}
_LINE_SCHEMA: dict[str, pl.DataType] = {c: _POLARS[t] for c, t in LINE_COLUMNS.items()}
_TEXT_SCHEMA: dict[str, pl.DataType] = {c: _POLARS[t] for c, t in TEXT_COLUMNS.items()}


def wanted_compute(points: pl.DataFrame, precisions: list[str]) -> list[tuple[str, ...]]:
    """The compute ceilings to draw for ``precisions``: per precision, each distinct ``peak_ceiling`` of its
    rows in ``points`` (a column of ``kernel_roofline``: the ceiling of the row's roof), else the options of
    :data:`PRECISION_CEILINGS` (first present wins)."""
    has_col = "peak_ceiling" in points.columns
    out: list[tuple[str, ...]] = []
    for p in precisions:
        named = (
            points.filter(pl.col("precision") == p)
            .get_column("peak_ceiling")
            .drop_nulls()
            .unique(maintain_order=True)
            if has_col
            else pl.Series([], dtype=pl.String)
        )
        out += [(n,) for n in named.to_list()] if named.len() else [PRECISION_CEILINGS.get(p, (p.upper(),))]
    return out


def point_roofs(points: pl.DataFrame) -> pl.DataFrame:
    """Compute ceiling rows made from the points themselves: one per ``peak_ceiling`` (the roof's name), its value
    the median of the rows' ``peak_flops_per_s`` (FLOP/s), for roofs the ceilings table does not name."""
    if "peak_ceiling" not in points.columns or "peak_flops_per_s" not in points.columns:
        return pl.DataFrame(schema={"ceiling": pl.String, "kind": pl.String, "value": pl.Float64})
    named = points.filter(pl.col("peak_ceiling").is_not_null() & positive("peak_flops_per_s"))
    return (
        named.group_by("peak_ceiling", maintain_order=True)
        .agg(
            pl.lit("compute").alias("kind"),
            pl.col("peak_flops_per_s").median().alias("value"),
            pl.lit("peak_flops_per_s of the kernels (median)").alias("formula"),
            pl.len().cast(pl.Int64).alias("n_kernels"),
        )
        .rename({"peak_ceiling": "ceiling"})
    )


def pick_ceilings(
    ceil: pl.DataFrame,
    levels: list[str],
    compute: list[tuple[str, ...]],
    from_points: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame, list[str]]:
    """(bandwidth rows, compute rows, wanted ceilings that the run lacks or holds no valid value for).

    ``levels``: l1 | l2 | dram; ``compute``: per wanted roof its names, the first present wins
    (:func:`wanted_compute`); a name matches a ceiling's ``ceiling`` or its ``label``, else a row of
    ``from_points`` (:func:`point_roofs`). One row per ceiling (the first of duplicates); bandwidth L1, L2, DRAM,
    compute by value, highest first."""
    valid = ceil.filter(positive("value"))
    label = pl.coalesce(pl.col("label"), pl.col("ceiling")) if "label" in valid.columns else pl.col("ceiling")
    have = set(valid.get_column("ceiling").to_list()) | set(valid.select(label).to_series().to_list())
    extra = from_points.filter(positive("value")) if from_points is not None else None
    have_extra = set(extra.get_column("ceiling").to_list()) if extra is not None else set()
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
    bw = valid.filter(pl.col("ceiling").is_in(bw_names) & (pl.col("kind") == "bandwidth"))
    comp = valid.filter((pl.col("ceiling").is_in(names) | label.is_in(names)) & (pl.col("kind") == "compute"))
    found = set(comp.get_column("ceiling").to_list()) | set(comp.select(label).to_series().to_list())
    if extra is not None and extra.height:
        comp = pl.concat([comp, extra.filter(pl.col("ceiling").is_in([n for n in names if n not in found]))],
                         how="diagonal_relaxed")  # fmt: skip
    bw = (
        bw.group_by("ceiling", maintain_order=True)
        .first()
        .sort(pl.col("ceiling").replace_strict({"L1": 0, "L2": 1, "DRAM": 2}, default=3))
    )
    comp = comp.group_by("ceiling", maintain_order=True).first().sort("value", descending=True)
    return bw, comp, missing


def _family_hit(valid: pl.DataFrame, name: str) -> str | None:
    """The fastest dense compute ceiling of ``valid`` of the same Tensor-Core source type as ``name``, or None."""
    family = tensor_family(name)
    if family is None:
        return None
    comp = valid.filter(pl.col("kind") == "compute").sort("value", descending=True)
    return next((str(c) for c in comp.get_column("ceiling").to_list() if tensor_family(c) == family), None)


def split_overlay(ceil: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(rows of the source the points are against, rows of the other sources drawn beside it): ceiling rows split
    on their ``overlay`` column (:func:`rooflake.views.ceilings.run_roofs`; absent: no overlay)."""
    if "overlay" not in ceil.columns:
        return ceil, ceil.clear()
    flag = pl.col("overlay").fill_null(False)
    return ceil.filter(~flag), ceil.filter(flag)


def overlay_roofs(
    overlays: pl.DataFrame, levels: list[str], compute: list[tuple[str, ...]]
) -> list[tuple[pl.DataFrame, pl.DataFrame]]:
    """Per other source (in row order): its (bandwidth rows, compute rows) for ``levels`` and ``compute``, as
    :func:`pick_ceilings` picks them (a source lacking a roof draws none)."""
    out = []
    for (_source,), rows in overlays.group_by(["source"], maintain_order=True):
        bw, comp, _missing = pick_ceilings(rows, levels, compute)
        if bw.height or comp.height:
            out.append((bw, comp))
    return out


def overlay_lines(
    picked: list[tuple[pl.DataFrame, pl.DataFrame]],
    x_lo: float,
    x_hi: float,
    first_order: int,
    cap: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Sampled lines of the other sources' roofs (:func:`ceiling_lines` per source), dashed, in the source's colour
    (:data:`SOURCE_COLOR`), their ``order`` from ``first_order`` on. A source without a compute roof of its own
    (ERT's FP64 under FP32 points) has its bandwidth roofs end at the top roof of ``cap`` (the compute rows drawn
    solid)."""
    frames = []
    for bw, comp in picked:
        if comp.height == 0 and cap is not None and cap.height:
            lines = ceiling_lines(bw, cap, x_lo, x_hi).filter(pl.col("kind") == "bandwidth")
        else:
            lines = ceiling_lines(bw, comp, x_lo, x_hi)
        source = next(
            iter(pl.concat([bw.select("source"), comp.select("source")]).get_column("source")), None
        )
        frames.append(
            lines.with_columns(
                (pl.col("order") + first_order).alias("order"),
                pl.lit(SOURCE_COLOR.get(str(source), "#777777")).alias("color"),
                pl.lit(OVERLAY_DASH, dtype=pl.List(pl.Int64())).alias("dash"),
            )
        )
        first_order += int(lines.get_column("order").max() or 0) + 1  # type: ignore[arg-type]
    return pl.concat(frames) if frames else pl.DataFrame(schema=_LINE_SCHEMA)


def merge_ceilings(ceil: pl.DataFrame) -> tuple[pl.DataFrame, int, int, int]:
    """One row per ceiling over the runs of a sweep: median value, min/max over the runs, counts summed.

    Returns (rows, number of runs, number of machines, number of machine keys): a report's peaks have one key per
    clock ncu profiled at (``gpu|cc|<n>MHz``), so one GPU at two clocks is one machine and two keys."""
    valid = ceil.filter(positive("value"))
    n_runs = valid.get_column("run_id").n_unique()
    keys = valid.get_column("machine_key").drop_nulls()
    n_keys = keys.n_unique()
    n_machines = keys.str.replace(r"\|\d+MHz$", "").n_unique()
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
        pl.col("label").first(),
    )
    return merged, n_runs, n_machines, n_keys


def ceiling_lines(bw: pl.DataFrame, comp: pl.DataFrame, x_lo: float, x_hi: float) -> pl.DataFrame:
    """Sampled (ai, flops_per_s) rows of every roof line, one ``order`` per roof
    (:func:`rooflake.render.rows.ceiling_line_rows`: y = min(W_l * x, P) for a bandwidth roof, y = P_p for a
    compute roof). Columns: :data:`_LINE_SCHEMA` (``label`` = :func:`ceiling_label`, ``color``/``dash`` its style).
    """
    return pl.DataFrame(ceiling_line_rows(bw.to_dicts(), comp.to_dicts(), x_lo, x_hi), schema=_LINE_SCHEMA)


def ceiling_text(
    lines: pl.DataFrame, x: tuple[float, float], y: tuple[float, float], width: int, height: int
) -> pl.DataFrame:
    """One label per roof, placed on the line (columns :data:`_TEXT_SCHEMA`;
    :func:`rooflake.render.rows.ceiling_text_rows`): bandwidth roofs near the left edge, rotated by ``angle``
    (degrees, Vega convention) to follow the slope of y = W * x on the log-log plot; compute roofs at the right
    edge (``align`` right)."""
    return pl.DataFrame(ceiling_text_rows(lines.to_dicts(), x, y, width, height), schema=_TEXT_SCHEMA)


def roof_layers(
    lines: pl.DataFrame,
    texts: pl.DataFrame,
    x_enc: alt.X,
    y_enc: alt.Y,
    tooltip: list[alt.Tooltip],
    legend: alt.Legend,
    clip: bool = True,
) -> tuple[list[alt.Chart], dict[str, Any]]:
    """The roof layers of a roofline-style chart and their datasets.

    Layers (named): ``ceilings`` (lines from dataset ``rl_ceilings``: colour and dash per ``label``, one legend
    entry per roof), ``ceiling_labels_bandwidth`` and ``ceiling_labels_compute`` (text from
    ``rl_ceiling_labels_bandwidth`` / ``_compute``). ``lines`` from :func:`ceiling_lines`, ``texts`` from
    :func:`ceiling_text`; ``y_enc`` must encode ``flops_per_s``. ``clip``: the lines are clipped to the plot
    (Vega-Lite's mark ``clip``), for a y range that need not cover them; a chart whose y range covers every
    line's points passes False (:func:`rooflake.render.rows.roof_layers_spec` says why)."""
    return roof_charts(roof_parts(lines.to_dicts(), texts.to_dicts()), x_enc, y_enc, tooltip, legend, clip)


def roof_charts(
    parts: tuple[dict[str, list[Any]], float, dict[str, Any]],
    x_enc: alt.X,
    y_enc: alt.Y,
    tooltip: list[alt.Tooltip],
    legend: alt.Legend,
    clip: bool = True,
) -> tuple[list[alt.Chart], dict[str, Any]]:
    """:func:`roof_layers` of its :func:`rooflake.render.rows.roof_parts` (legend scales, label angle,
    datasets)."""
    import altair as alt

    scales, angle, datasets = parts
    domain = scales["domain"]
    roof = (
        alt.Chart(alt.NamedData(name="rl_ceilings"), name="ceilings")
        .mark_line(strokeWidth=2, clip=clip)
        .encode(
            x=x_enc,
            y=y_enc,
            color=alt.Color(
                "label:N",
                title="Ceilings",
                scale=alt.Scale(domain=domain, range=scales["color"]),
                legend=legend,
            ),
            strokeDash=alt.StrokeDash(
                "label:N", title="Ceilings", scale=alt.Scale(domain=domain, range=scales["dash"])
            ),
            detail=alt.Detail("order:O"),
            order=alt.Order("ai:Q"),
            tooltip=tooltip,
        )
    )
    text_layers = [
        alt.Chart(alt.NamedData(name="rl_ceiling_labels_bandwidth"), name="ceiling_labels_bandwidth")
        .mark_text(align="left", angle=angle, **TEXT_STYLE)
        .encode(x=x_enc, y=y_enc, text=alt.Text("text:N")),
        alt.Chart(alt.NamedData(name="rl_ceiling_labels_compute"), name="ceiling_labels_compute")
        .mark_text(align="right", dx=-4, **TEXT_STYLE)
        .encode(x=x_enc, y=y_enc, text=alt.Text("text:N")),
    ]
    return [roof, *text_layers], datasets
