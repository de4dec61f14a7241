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

import math
from typing import TYPE_CHECKING, Any

import polars as pl

from rooflake.render.axes import decades, slope_angle
from rooflake.render.formats import si
from rooflake.render.inputs import positive, values
from rooflake.render.marks import LEVEL_LABEL

if TYPE_CHECKING:  # imported where layers are built: roof_layers_spec needs no Altair (issue 14)
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
    "roof_layers",
    "roof_layers_spec",
    "roof_name",
    "layer_spec",
    "mark_spec",
    "split_overlay",
    "tensor_family",
    "wanted_compute",
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
#: Roofs of the other sources (``--ceilings all``): one colour per source, dashed.
SOURCE_COLOR = {
    "ncu-report": "#d62728",
    "datasheet": "#1f77b4",
    "ert": "#2ca02c",
    "ert-spec": "#17becf",
    "measured": "#9467bd",
}
OVERLAY_DASH = [5, 3]

_LINE_SCHEMA: dict[str, pl.DataType] = {
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
_TEXT_SCHEMA: dict[str, pl.DataType] = {
    "order": pl.Int64(),
    "text": pl.String(),
    "ai": pl.Float64(),
    "flops_per_s": pl.Float64(),
    "angle": pl.Float64(),
    "align": pl.String(),
}
_TEXT_STYLE: dict[str, Any] = {"baseline": "bottom", "dy": -3, "fontSize": 11, "color": "#333333"}


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


def tensor_family(name: str) -> str | None:
    """The source-type key of a Tensor-Core ceiling name (``TENSOR FP16→FP32``, ``TENSOR FP16 HGMMA`` and ``TENSOR
    FP16`` -> ``TENSOR FP16``), as ``ceilings_side_by_side`` pairs them; None for another name or a sparse roof."""
    if not name.startswith("TENSOR ") or name.endswith(" SPARSE"):
        return None
    return "TENSOR " + name[7:].split(" ")[0].split("→")[0]


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


def merge_ceilings(ceil: pl.DataFrame) -> tuple[pl.DataFrame, int, int]:
    """One row per ceiling over the runs of a sweep: median value, min/max over the runs, counts summed.

    Returns (rows, number of runs, number of machines)."""
    valid = ceil.filter(positive("value"))
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
        pl.col("label").first(),
    )
    return merged, n_runs, n_machines


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


def _sampled(row: dict[str, Any], order: int, xs: set[float], y: Any, top: bool) -> list[dict[str, Any]]:
    """Rows of one roof: the ceiling row with its label, order and style, at each x of ``xs`` (y = ``y(x)``)."""
    color, dash = ceiling_style(row["ceiling"], row["kind"], top)
    base = {**row, "label": ceiling_label(row), "order": order, "color": color, "dash": dash}
    return [{**base, "ai": x, "flops_per_s": y(x)} for x in sorted(xs)]


def ceiling_lines(bw: pl.DataFrame, comp: pl.DataFrame, x_lo: float, x_hi: float) -> pl.DataFrame:
    """Sampled (ai, flops_per_s) rows of every roof line, one ``order`` per roof.

    Bandwidth roof of level l: y = W_l * x up to its ridge with the top compute roof P (so y = min(W_l * x, P)
    where drawn); compute roof P_p: y = P_p from its ridge with the widest bandwidth roof drawn to the right
    edge. Columns: :data:`_LINE_SCHEMA` (``label`` = :func:`ceiling_label`, ``color``/``dash`` its style).
    """
    p_max = float(comp.get_column("value").max()) if comp.height else None  # type: ignore[arg-type]
    w_max = float(bw.get_column("value").max()) if bw.height else None  # type: ignore[arg-type]
    grid = decades(x_lo, x_hi)
    rows: list[dict[str, Any]] = []
    order = 0
    for row in bw.iter_rows(named=True):
        w = float(row["value"])
        end = x_hi if p_max is None else min(max(p_max / w, x_lo), x_hi)

        def sloped(x: float, w: float = w) -> float:
            return w * x if p_max is None else min(w * x, p_max)

        rows += _sampled(row, order, {x_lo, end, *(g for g in grid if g < end)}, sloped, False)
        order += 1
    for row in comp.iter_rows(named=True):
        p = float(row["value"])
        start = x_lo if w_max is None else min(max(p / w_max, x_lo), x_hi)
        xs = {start, x_hi, *(g for g in grid if g > start)}
        rows += _sampled(row, order, xs, lambda _x, p=p: p, p == p_max)
        order += 1
    return pl.DataFrame([{c: r.get(c) for c in _LINE_SCHEMA} for r in rows], schema=_LINE_SCHEMA)


def ceiling_text(
    lines: pl.DataFrame, x: tuple[float, float], y: tuple[float, float], width: int, height: int
) -> pl.DataFrame:
    """One label per roof, placed on the line (columns :data:`_TEXT_SCHEMA`).

    Bandwidth roofs near the left edge, rotated by ``angle`` (degrees, Vega convention) to follow the slope of
    y = W * x on the log-log plot; compute roofs at the right edge (``align`` right).
    """
    x_dec = math.log10(x[1] / x[0])
    angle = -slope_angle(x, y, width, height)
    out: list[dict[str, Any]] = []
    for (order,), grp in lines.group_by(["order"], maintain_order=True):
        first = grp.row(0, named=True)
        text = first["label"].rsplit(" (", 1)[0]  # the legend carries the source
        if first["kind"] != "bandwidth":
            flops = float(first["value"])
            out.append(
                {
                    "order": order,
                    "text": text,
                    "ai": x[1],
                    "flops_per_s": flops,
                    "angle": 0.0,
                    "align": "right",
                }
            )
            continue
        end = float(grp.get_column("ai").max())  # type: ignore[arg-type]
        ax = min(x[0] * 10 ** (0.04 * x_dec), math.sqrt(x[0] * end))
        w = float(first["value"])
        ay = w * ax
        if ay < y[0]:  # the roof enters the plot above its left edge: start where it does
            ax, ay = y[0] / w * 10 ** (0.04 * x_dec), y[0] * 10 ** (0.04 * x_dec)
        out.append(
            {"order": order, "text": text, "ai": ax, "flops_per_s": ay, "angle": angle, "align": "left"}
        )
    return pl.DataFrame(out, schema=_TEXT_SCHEMA)


def _roof_parts(
    lines: pl.DataFrame, texts: pl.DataFrame
) -> tuple[dict[str, list[Any]], float, dict[str, Any]]:
    """What the roof layers draw: the legend's scales (``domain`` the labels, ``color``, ``dash``), the angle of the
    bandwidth labels (degrees, Vega's clockwise), and the datasets (:func:`roof_layers`)."""
    legend_rows = lines.unique("label", maintain_order=True)
    scales = {
        "domain": legend_rows.get_column("label").to_list(),
        "color": legend_rows.get_column("color").to_list(),
        "dash": legend_rows.get_column("dash").to_list(),
    }
    bw_text = texts.filter(pl.col("align") == "left")
    comp_text = texts.filter(pl.col("align") == "right")
    angle = float((bw_text.get_column("angle").to_list() or [0.0])[0]) % 360
    datasets = {
        "rl_ceilings": values(lines.drop("color", "dash")),
        "rl_ceiling_labels_bandwidth": values(bw_text),
        "rl_ceiling_labels_compute": values(comp_text),
    }
    return scales, angle, datasets


def roof_layers(
    lines: pl.DataFrame,
    texts: pl.DataFrame,
    x_enc: alt.X,
    y_enc: alt.Y,
    tooltip: list[alt.Tooltip],
    legend: alt.Legend,
) -> tuple[list[alt.Chart], dict[str, Any]]:
    """The roof layers of a roofline-style chart and their datasets.

    Layers (named): ``ceilings`` (lines from dataset ``rl_ceilings``: colour and dash per ``label``, one legend
    entry per roof), ``ceiling_labels_bandwidth`` and ``ceiling_labels_compute`` (text from
    ``rl_ceiling_labels_bandwidth`` / ``_compute``). ``lines`` from :func:`ceiling_lines`, ``texts`` from
    :func:`ceiling_text`; ``y_enc`` must encode ``flops_per_s``."""
    import altair as alt

    scales, angle, datasets = _roof_parts(lines, texts)
    domain = scales["domain"]
    roof = (
        alt.Chart(alt.NamedData(name="rl_ceilings"), name="ceilings")
        .mark_line(strokeWidth=2, clip=True)
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
        .mark_text(align="left", angle=angle, **_TEXT_STYLE)
        .encode(x=x_enc, y=y_enc, text=alt.Text("text:N")),
        alt.Chart(alt.NamedData(name="rl_ceiling_labels_compute"), name="ceiling_labels_compute")
        .mark_text(align="right", dx=-4, **_TEXT_STYLE)
        .encode(x=x_enc, y=y_enc, text=alt.Text("text:N")),
    ]
    return [roof, *text_layers], datasets


def mark_spec(kind: str, **props: Any) -> dict[str, Any]:
    """A mark as the Vega-Lite dict Altair's ``to_dict`` gives of ``mark_<kind>(**props)``: ``type`` first, the
    properties in name order."""
    return {"type": kind, **dict(sorted(props.items()))}


def layer_spec(data: str, mark: dict[str, Any], encoding: dict[str, Any], name: str) -> dict[str, Any]:
    """One layer as Altair's ``to_dict`` gives ``alt.Chart(alt.NamedData(name=data), name=name).mark_*(...)
    .encode(...)``: the channels in name order."""
    return {"data": {"name": data}, "mark": mark, "encoding": dict(sorted(encoding.items())), "name": name}


def roof_layers_spec(
    lines: pl.DataFrame,
    texts: pl.DataFrame,
    x_enc: dict[str, Any],
    y_enc: dict[str, Any],
    tooltip: list[dict[str, Any]],
    legend: dict[str, Any],
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """:func:`roof_layers` as the Vega-Lite dicts Altair's ``to_dict`` gives of them, and the same datasets, built
    without Altair (``x_enc``, ``y_enc``: :func:`rooflake.render.axes.ai_x_spec`, ``flops_y_spec``; ``tooltip``
    and ``legend`` as dicts). tests/test_png_spec.py checks the whole chart equal to Altair's."""
    scales, angle, datasets = _roof_parts(lines, texts)
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
    layers = [
        layer_spec("rl_ceilings", mark_spec("line", strokeWidth=2, clip=True), roof, "ceilings"),
        layer_spec(
            "rl_ceiling_labels_bandwidth",
            mark_spec("text", align="left", angle=angle, **_TEXT_STYLE),
            text,
            "ceiling_labels_bandwidth",
        ),
        layer_spec(
            "rl_ceiling_labels_compute",
            mark_spec("text", align="right", dx=-4, **_TEXT_STYLE),
            text,
            "ceiling_labels_compute",
        ),
    ]
    return layers, datasets
