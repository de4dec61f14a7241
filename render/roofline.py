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

The only I/O is :func:`save_chart`.
"""

from __future__ import annotations

import html
import json
import math
import os
import uuid
from pathlib import Path
from typing import Any, Literal, TypeAlias

import altair as alt
import polars as pl
import pyarrow as pa

from rooflake.schema import RooflineDataError

__all__ = [
    "LEVELS",
    "PRECISIONS",
    "SAVE_SUFFIXES",
    "roofline_chart",
    "save_chart",
    "zero_flop_table",
]

#: ``level`` arguments of :func:`roofline_chart` (``all`` draws the three levels at once).
LEVELS = ("dram", "l2", "l1", "all")
#: ``precision`` arguments of :func:`roofline_chart` (``all`` = each kernel's dominant precision).
PRECISIONS = ("fp64", "fp32", "fp16", "tensor", "all")
#: Suffixes :func:`save_chart` writes.
SAVE_SUFFIXES = (".html", ".png", ".svg")

NAME_CHARS = 80  # demangled names can exceed 1 kB; this many characters are shown
X_RANGE = (1e-3, 1e4)  # FLOP/byte, the least x range of the chart (extended to the data and the ridge points)
MAX_BELOW_ROWS = 25  # zero-FLOP kernels listed under a PNG/SVG chart
_BELOW_COLUMNS: tuple[tuple[str, Literal["left", "right"], int], ...] = (
    ("name", "left", 0),
    ("duration", "right", 720),
    ("share", "right", 800),
)

_LEVEL_ORDER = ("l1", "l2", "dram")  # innermost first: expect AI_L1 <= AI_L2 <= AI_DRAM
_LEVEL_LABEL = {"l1": "L1", "l2": "L2", "dram": "DRAM"}
_LEVEL_SHAPE = {"L1": "triangle-up", "L2": "square", "DRAM": "circle"}
_PRECISION_CEILINGS: dict[str, tuple[str, ...]] = {
    "fp64": ("FP64",),
    "fp32": ("FP32",),
    "fp16": ("FP16",),
    "tensor": ("TENSOR_FP16", "TENSOR"),  # first one present wins (same choice as kernel_roofline)
}
_BW_COLOR = {"L1": "#aaaaaa", "L2": "#666666", "DRAM": "#111111"}  # roofs in greys, kernels in colour
_FLAG_STROKE = "#e31a1c"

# Columns of kernel_roofline that roofline_chart needs; the display-only ones are filled with nulls if absent.
_POINT_REQUIRED = ("run_id", "kernel_id", "name", "precision", "duration_ns", "flops", "achieved_flops_per_s")
_POINT_OPTIONAL: dict[str, pl.DataType] = {
    "short_name": pl.String(),
    "nvtx_path": pl.String(),
    "is_dominant": pl.Boolean(),
    "zero_flops": pl.Boolean(),
    "attainable_flops_per_s": pl.Float64(),
    "fraction_of_roof": pl.Float64(),
    "bound": pl.String(),
    "above_roof": pl.Boolean(),
    "flags": pl.List(pl.String()),
    **{f"{q}_{lv}": pl.Float64() for q in ("bytes", "attainable") for lv in _LEVEL_ORDER},
}
_CEILING_REQUIRED = ("ceiling", "kind", "value")
_CEILING_OPTIONAL: dict[str, pl.DataType] = {
    "run_id": pl.String(),
    "machine_key": pl.String(),
    "value_min": pl.Float64(),
    "value_max": pl.Float64(),
    "clock_hz": pl.Float64(),
    "unit": pl.String(),
    "formula": pl.String(),
    "source": pl.String(),
    "n_kernels": pl.Int64(),
    "n_invalid": pl.Int64(),
}

Table: TypeAlias = pa.Table | pl.DataFrame


# --------------------------------------------------------------------------------------------------- helpers


def _frame(table: Any, what: str) -> pl.DataFrame:
    """``table`` (pyarrow.Table, RecordBatch(Reader) or polars.DataFrame) as a polars DataFrame."""
    if isinstance(table, pl.DataFrame):
        return table
    if isinstance(table, pa.RecordBatchReader):  # DuckDB 2's relation.arrow()
        table = table.read_all()
    elif isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    if isinstance(table, pa.Table):
        out = pl.from_arrow(table)
        assert isinstance(out, pl.DataFrame)  # a Table always converts to a DataFrame
        return out
    raise TypeError(f"{what}: expected a pyarrow.Table or polars.DataFrame, got {type(table).__name__}")


def _conform(
    df: pl.DataFrame, required: tuple[str, ...], optional: dict[str, pl.DataType], what: str
) -> pl.DataFrame:
    """Check the required columns, add absent optional ones as nulls, turn float NaN into null."""
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise ValueError(
            f"{what} lacks column(s) {', '.join(missing)} (has: {', '.join(df.columns) or 'none'})"
        )
    df = df.with_columns(pl.lit(None, dtype=t).alias(c) for c, t in optional.items() if c not in df.columns)
    floats = [c for c, t in df.schema.items() if t in (pl.Float32, pl.Float64)]
    return df.with_columns(pl.col(c).fill_nan(None) for c in floats)


def _positive(col: str) -> pl.Expr:
    """``col`` is a number > 0 (null, NaN, 0 and negatives are not)."""
    return pl.col(col).fill_null(0.0) > 0  # NaN was made null by _conform


def _truncate(expr: pl.Expr, n: int = NAME_CHARS) -> pl.Expr:
    return pl.when(expr.str.len_chars() > n).then(expr.str.slice(0, n - 1) + "…").otherwise(expr)


def _truncate_str(s: str | None, n: int = NAME_CHARS) -> str:
    s = s or ""
    return s if len(s) <= n else s[: n - 1] + "…"


def _si(value: float, unit: str) -> str:
    """``2.0386e12, 'B/s'`` -> ``'2.04 TB/s'`` (3 significant digits, SI prefix)."""
    for factor, prefix in ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor * 0.9995:
            return f"{value / factor:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def _duration(ns: float | None) -> str:
    if ns is None or (isinstance(ns, float) and math.isnan(ns)):
        return "n/a"
    for factor, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "µs")):
        if ns >= factor:
            return f"{ns / factor:.4g} {unit}"
    return f"{ns:.4g} ns"


def _share(x: float | None) -> str:
    return "n/a" if x is None or math.isnan(x) else f"{100 * x:.1f} %"


def _values(df: pl.DataFrame) -> list[dict[str, Any]]:
    """Rows of ``df`` for a named Vega-Lite dataset (not Altair's data transformer: no 5000-row limit).

    NaN must be null already (JSON has no NaN): :func:`_conform` did that.
    """
    return df.to_dicts()


def _inline(df: pl.DataFrame) -> alt.InlineData:
    return alt.InlineData(values=_values(df))


def _decades(lo: float, hi: float) -> list[float]:
    return [10.0**e for e in range(math.ceil(math.log10(lo) - 1e-9), math.floor(math.log10(hi) + 1e-9) + 1)]


# --------------------------------------------------------------------------------------------------- tables


def zero_flop_table(points: Table) -> pl.DataFrame:
    """Kernels that executed no floating-point operation: they have no place on a log-AI axis.

    Input: rows of the ``kernel_roofline`` query (pyarrow.Table or polars.DataFrame), columns ``run_id``,
    ``kernel_id``, ``name``, ``short_name``, ``duration_ns`` (ns, may be NaN) and ``flops`` (FLOP, may be
    null); one row per kernel x precision.

    A kernel (distinct ``run_id, kernel_id``) is listed when its FLOP count is 0 in every precision present,
    or missing (no FLOP counters) in all of them. Design section 5 ("Zero-FLOP kernels": copies, casts,
    transposes are reported apart, with their share of time).

    Returns a polars DataFrame, sorted by ``duration_ns`` descending (unknown durations last), columns:

    - ``run_id`` (str), ``kernel_id`` (int), ``name`` (str, full demangled name), ``short_name`` (str)
    - ``duration_ns`` (float, ns; null where the report's duration is NaN)
    - ``share_of_time`` (float, 0..1): duration / the run's total ``duration_ns`` over all its kernels in
      ``points`` (NaN durations left out of the total); null if unknown
    - ``total_share_of_time`` (float, 0..1): the share of all zero-FLOP kernels of the run together (same
      value on every row of a run)
    - ``reason`` (str): ``zero FLOPs`` (counters present, all 0) or ``no FLOP counters``

    Raises ``ValueError`` if a needed column is missing, ``TypeError`` for another input type.
    """
    df = _conform(
        _frame(points, "points"),
        ("run_id", "kernel_id", "name", "duration_ns", "flops"),
        {"short_name": pl.String()},
        "points",
    )
    per_kernel = df.group_by("run_id", "kernel_id", maintain_order=True).agg(
        pl.col("name").first(),
        pl.col("short_name").first(),
        pl.col("duration_ns").drop_nulls().first(),
        (pl.col("flops").fill_null(0.0) > 0).any().alias("_has_flops"),
        pl.col("flops").is_not_null().any().alias("_has_counters"),
    )
    totals = per_kernel.group_by("run_id").agg(pl.col("duration_ns").sum().alias("_run_ns"))
    zero = (
        per_kernel.filter(~pl.col("_has_flops"))
        .join(totals, on="run_id", how="left")
        .with_columns(
            pl.when(pl.col("_run_ns") > 0)
            .then(pl.col("duration_ns") / pl.col("_run_ns"))
            .alias("share_of_time"),
            pl.when(pl.col("_has_counters"))
            .then(pl.lit("zero FLOPs"))
            .otherwise(pl.lit("no FLOP counters"))
            .alias("reason"),
        )
        .with_columns(pl.col("share_of_time").sum().over("run_id").alias("total_share_of_time"))
        .with_columns(
            pl.when(pl.col("_run_ns") > 0).then(pl.col("total_share_of_time")).alias("total_share_of_time")
        )
    )
    return zero.sort("duration_ns", descending=True, nulls_last=True, maintain_order=True).select(
        pl.col("run_id").cast(pl.String),
        pl.col("kernel_id").cast(pl.Int64),
        pl.col("name").cast(pl.String),
        pl.col("short_name").cast(pl.String),
        pl.col("duration_ns").cast(pl.Float64),
        pl.col("share_of_time").cast(pl.Float64),
        pl.col("total_share_of_time").cast(pl.Float64),
        "reason",
    )


# --------------------------------------------------------------------------------------------------- chart


def _select_rows(df: pl.DataFrame, precision: str) -> pl.DataFrame:
    if precision == "all":
        return df.filter(pl.col("is_dominant").fill_null(False))
    return df.filter(pl.col("precision") == precision)


def _has_flops() -> pl.Expr:
    return _positive("flops") & ~pl.col("zero_flops").fill_null(False)


def _has_time() -> pl.Expr:
    return _positive("achieved_flops_per_s") & _positive("duration_ns")


def _keys(df: pl.DataFrame) -> set[tuple[Any, Any]]:
    return set(df.select("run_id", "kernel_id").iter_rows())


def _point_rows(rows: pl.DataFrame, levels: list[str]) -> tuple[pl.DataFrame, list[tuple[str, int, str]]]:
    """Long frame of drawable (kernel, level) points, and why the others cannot be drawn.

    The reasons are ``(what, n_rows, text)`` with ``what`` in ``flops``, ``time`` or a level (``L2``) and
    ``text`` a phrase to follow the count, e.g. ``(\"L2\", 4, \"have no L2 bytes (0 bytes)\")``.
    """
    has_flops, has_time = _has_flops(), _has_time()
    reasons: list[tuple[str, int, str]] = []
    n_no_flops = rows.filter(~has_flops).height
    n_no_time = rows.filter(has_flops & ~has_time).height
    if n_no_flops:
        reasons.append(("flops", n_no_flops, "have no FLOPs (zero or not counted)"))
    if n_no_time:
        reasons.append(("time", n_no_time, "have no usable duration (NaN, missing or 0)"))
    flags_dtype = rows.schema["flags"]
    flags = (
        pl.col("flags").cast(pl.List(pl.String)).list.join(", ").fill_null("")
        if isinstance(flags_dtype, pl.List)
        else pl.col("flags").cast(pl.String).fill_null("")
    )
    base = rows.filter(has_flops & has_time).with_columns(
        _truncate(pl.col("name").cast(pl.String)).alias("name"),
        pl.coalesce(pl.col("short_name"), _truncate(pl.col("name").cast(pl.String), 40)).alias("kernel"),
        flags.alias("flags"),
    )
    parts = []
    for lv in sorted(
        levels, key=lambda lv: -_LEVEL_ORDER.index(lv)
    ):  # DRAM first: small L1 marks drawn on top
        ok = _positive(f"ai_{lv}")
        missing = base.filter(~ok)
        if missing.height:
            no_counter = missing.filter(pl.col(f"bytes_{lv}").is_null()).height
            what = f"have no {_LEVEL_LABEL[lv]} bytes"
            if no_counter == missing.height:
                what += " (counter missing)"
            elif no_counter == 0:
                what += " (0 bytes)"
            reasons.append((_LEVEL_LABEL[lv], missing.height, what))
        parts.append(
            base.filter(ok).with_columns(
                pl.lit(_LEVEL_LABEL[lv]).alias("level"),
                pl.col(f"ai_{lv}").alias("ai"),
                pl.col(f"bytes_{lv}").alias("bytes_level"),
                pl.col(f"attainable_{lv}").alias("attainable_level"),
            )
        )
    long = pl.concat(parts, how="vertical_relaxed")
    long = long.with_columns(
        (pl.col("above_roof").fill_null(False) | (pl.col("flags") != "")).alias("flagged"),
        pl.col("fraction_of_roof").fill_null(float("nan")).alias("_f"),
    ).select(
        pl.col("run_id").cast(pl.String),
        pl.col("kernel_id").cast(pl.Int64),
        "name",
        "kernel",
        pl.col("short_name").cast(pl.String),
        pl.col("nvtx_path").cast(pl.String),
        pl.col("precision").cast(pl.String),
        "level",
        pl.col("ai").cast(pl.Float64),
        pl.col("achieved_flops_per_s").cast(pl.Float64),
        pl.col("attainable_level").cast(pl.Float64),
        pl.col("attainable_flops_per_s").cast(pl.Float64),
        pl.col("fraction_of_roof").cast(pl.Float64),
        pl.col("bound").cast(pl.String),
        pl.col("duration_ns").cast(pl.Float64),
        pl.col("flops").cast(pl.Float64),
        pl.col("bytes_level").cast(pl.Float64),
        pl.col("above_roof").fill_null(False),
        "flags",
        "flagged",
    )
    return long, reasons


def _pick_ceilings(
    ceil: pl.DataFrame, levels: list[str], precisions: list[str]
) -> tuple[pl.DataFrame, pl.DataFrame, list[str]]:
    """(bandwidth rows, compute rows, wanted ceilings that the run lacks or holds no valid value for)."""
    valid = ceil.filter(_positive("value"))
    have = set(valid.get_column("ceiling").to_list())
    missing: list[str] = []
    bw_names = [_LEVEL_LABEL[lv] for lv in levels]
    missing += [n for n in bw_names if n not in have]
    compute_names: list[str] = []
    for p in precisions:
        options = _PRECISION_CEILINGS[p]
        hit = next((n for n in options if n in have), None)
        if hit is None:
            missing.append("/".join(options))
        elif hit not in compute_names:
            compute_names.append(hit)
    bw = valid.filter(pl.col("ceiling").is_in(bw_names) & (pl.col("kind") == "bandwidth"))
    comp = valid.filter(pl.col("ceiling").is_in(compute_names) & (pl.col("kind") == "compute"))
    # one row per ceiling (run_ceilings gives one per run x ceiling; tolerate duplicates: keep the first)
    bw = (
        bw.group_by("ceiling", maintain_order=True)
        .first()
        .sort(pl.col("ceiling").replace_strict({"L1": 0, "L2": 1, "DRAM": 2}, default=3))
    )
    comp = comp.group_by("ceiling", maintain_order=True).first().sort("value", descending=True)
    return bw, comp, missing


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
        "stroke": alt.condition("datum.flagged", alt.value(_FLAG_STROKE), alt.value("white")),
        "strokeWidth": alt.condition("datum.flagged", alt.value(2.5), alt.value(0.7)),
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


# --------------------------------------------------------------------------------------------------- saving


def _below_total(below: pl.DataFrame) -> float | None:
    """The zero-FLOP share of time over the runs in ``below`` (one total per run, summed)."""
    if "run_id" not in below.columns or "total_share_of_time" not in below.columns:
        return None
    return float(below.unique("run_id").get_column("total_share_of_time").fill_null(float("nan")).sum())


def _below_html(below: pl.DataFrame) -> str:
    total = _below_total(below)
    rows = []
    for r in below.iter_rows(named=True):
        full = r.get("name") or ""
        rows.append(
            "<tr>"
            f'<td title="{html.escape(full)}"><code>{html.escape(_truncate_str(full))}</code></td>'
            f"<td>{html.escape(r.get('short_name') or '')}</td>"
            f'<td class="num">{_duration(r.get("duration_ns"))}</td>'
            f'<td class="num">{_share(r.get("share_of_time"))}</td>'
            "</tr>"
        )
    foot = (
        f'<tfoot><tr><td colspan="3">{below.height} kernel(s)</td>'
        f'<td class="num">{_share(total)}</td></tr></tfoot>'
        if total is not None
        else ""
    )
    return (
        '\n<section class="rl-zero-flops" style="font-family: sans-serif; margin: 1.5em 0 0 0.5em;">\n'
        "<style>.rl-zero-flops table{border-collapse:collapse;font-size:13px}"
        ".rl-zero-flops td,.rl-zero-flops th{border-bottom:1px solid #ddd;padding:3px 10px;text-align:left}"
        ".rl-zero-flops .num{text-align:right}</style>\n"
        "<h3>Kernels without FLOPs (no place on a log-AI axis)</h3>\n"
        "<table><thead><tr><th>name</th><th>short name</th><th>duration</th>"
        "<th>share of time</th></tr></thead>\n"
        f"<tbody>{''.join(rows)}</tbody>{foot}</table>\n</section>\n"
    )


def _below_chart(below: pl.DataFrame) -> alt.LayerChart:
    total = _below_total(below)
    shown = below.head(MAX_BELOW_ROWS)
    lines = [
        {
            "row": i,
            "name": _truncate_str(r.get("name")),
            "duration": _duration(r.get("duration_ns")),
            "share": _share(r.get("share_of_time")),
        }
        for i, r in enumerate(shown.iter_rows(named=True))
    ]
    if below.height > MAX_BELOW_ROWS:
        lines.append(
            {
                "row": len(lines),
                "name": f"… and {below.height - MAX_BELOW_ROWS} more",
                "duration": "",
                "share": "",
            }
        )
    data = pl.DataFrame(
        lines, schema={"row": pl.Int64, "name": pl.String, "duration": pl.String, "share": pl.String}
    )
    cols = [
        alt.Chart(_inline(data), name=f"zero_flops_{field}")
        .mark_text(align=align, fontSize=11, font="monospace" if field == "name" else "sans-serif")
        .encode(x=alt.value(x), y=alt.Y("row:O", axis=None), text=f"{field}:N")
        for field, align, x in _BELOW_COLUMNS
    ]
    return alt.LayerChart(layer=cols).properties(
        view=alt.ViewBackground(stroke=None),
        width=800,
        height=16 * len(lines),
        title=alt.TitleParams(
            "Kernels without FLOPs (no place on a log-AI axis)",
            subtitle=f"{below.height} kernel(s), {_share(total)} of the run's time "
            "· name, duration, share of time",
            anchor="start",
            fontSize=13,
        ),
    )


def _spec_dict(chart: Any) -> dict[str, Any]:
    """``chart.to_dict()``, the top-level ``datasets`` set aside while Altair walks and validates the spec.

    Altair visits every value of every row in ``to_dict``: seconds for a run of a few thousand kernels. The
    datasets of :func:`roofline_chart` are plain JSON rows already, so they are put back unvisited.
    """
    datasets = getattr(chart, "datasets", alt.Undefined)
    if not isinstance(datasets, dict) or not datasets:
        return chart.to_dict()
    light = chart.copy(deep=True, ignore=["datasets"])
    light.datasets = alt.Undefined
    spec = light.to_dict()
    spec["datasets"] = {**spec.get("datasets", {}), **datasets}
    return spec


def _vconcat(top: dict[str, Any], bottom: dict[str, Any]) -> dict[str, Any]:
    """Two top-level Vega-Lite specs stacked vertically (datasets, config and schema hoisted to the top)."""
    top, bottom = dict(top), dict(bottom)
    out: dict[str, Any] = {"$schema": top.pop("$schema", bottom.get("$schema"))}
    bottom.pop("$schema", None)
    out["config"] = {**bottom.pop("config", {}), **top.pop("config", {})}
    out["datasets"] = {**bottom.pop("datasets", {}), **top.pop("datasets", {})}
    out["vconcat"] = [top, bottom]
    out["spacing"] = 24
    return out


def _write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to a temporary file next to ``path`` (mode per umask), fsync, then ``os.replace``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        with open(tmp, "xb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def save_chart(
    chart: alt.TopLevelMixin, path: str | os.PathLike[str], *, below: pl.DataFrame | None = None
) -> None:
    """Write ``chart`` to ``path``, the format chosen by the suffix; works offline.

    - ``.html``: ``chart.to_html(inline=True)`` (Vega, Vega-Lite and vega-embed JavaScript embedded, no CDN);
      when ``below`` (the :func:`zero_flop_table` of the run) is given and non-empty, an HTML table "Kernels
      without FLOPs (no place on a log-AI axis)" follows the chart: name (truncated, full name on hover),
      short name, duration, share of time, and the total share.
    - ``.png`` (scale 2) / ``.svg``: rendered by vl-convert (``vegalite_to_png`` / ``vegalite_to_svg``), no
      browser; a non-empty ``below`` is drawn under the chart as a text list (first 25 kernels).

    ``below`` columns: ``name``, ``short_name``, ``duration_ns`` (ns), ``share_of_time`` (0..1),
    ``total_share_of_time`` and ``run_id`` (for the total). The file is written atomically (temporary file in
    the same directory, then ``os.replace``); missing parent directories are created.

    Raises ``ValueError`` for a suffix other than .html, .png, .svg (the message names the path); ``OSError``
    if the file cannot be written.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SAVE_SUFFIXES:
        raise ValueError(
            f"cannot save a chart to {str(path)!r}: unknown suffix {path.suffix!r} "
            f"(allowed: {', '.join(SAVE_SUFFIXES)})"
        )
    has_below = below is not None and below.height > 0
    spec = _spec_dict(chart)
    if suffix == ".html":
        page = (
            alt.utils.spec_to_html(  # what chart.save(path, inline=True) writes, without re-walking the data
                spec,
                mode="vega-lite",
                vegalite_version=alt.VEGALITE_VERSION,
                vegaembed_version=alt.VEGAEMBED_VERSION,
                vega_version=alt.VEGA_VERSION,
                template="inline",
            )
        )
        if has_below:
            assert below is not None
            table = _below_html(below)
            at = page.rfind("</body>")
            page = page[:at] + table + page[at:] if at >= 0 else page + table
        _write_atomic(path, page.encode("utf-8"))
        return

    import vl_convert as vlc

    if has_below:
        assert below is not None
        spec = _vconcat(spec, _spec_dict(_below_chart(below)))
    spec_json = json.dumps(spec, allow_nan=False)
    if suffix == ".png":
        data: bytes = vlc.vegalite_to_png(spec_json, scale=2)
    else:
        data = vlc.vegalite_to_svg(spec_json).encode("utf-8")
    _write_atomic(path, data)
