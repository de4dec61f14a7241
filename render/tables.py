"""Input tables of the roofline charts: normalisation, row selection, and the zero-FLOP table.

Inputs are rows of the ``kernel_roofline`` and ``run_ceilings`` queries (pyarrow.Table or polars.DataFrame);
this module checks and conforms their columns, picks the rows and ceilings a chart draws, reshapes the points
into one row per (kernel, level), and lists the kernels without FLOPs (:func:`zero_flop_table`). It also holds
the small text formatters shared by the chart and the saved zero-FLOP table. No I/O, no drawing.
"""

from __future__ import annotations

import math
from typing import Any, TypeAlias

import polars as pl
import pyarrow as pa

__all__ = ["Table", "zero_flop_table"]

NAME_CHARS = 80  # demangled names can exceed 1 kB; this many characters are shown

_LEVEL_ORDER = ("l1", "l2", "dram")  # innermost first: expect AI_L1 <= AI_L2 <= AI_DRAM
_LEVEL_LABEL = {"l1": "L1", "l2": "L2", "dram": "DRAM"}
_PRECISION_CEILINGS: dict[str, tuple[str, ...]] = {
    "fp64": ("FP64",),
    "fp32": ("FP32",),
    "fp16": ("FP16",),
    "tensor": ("TENSOR_FP16", "TENSOR"),  # first one present wins (same choice as kernel_roofline)
}

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


def _typed(df: pl.DataFrame, columns: dict[str, pl.DataType | None]) -> pl.DataFrame:
    """``df`` reduced to ``columns``, in their order, each cast to its type (``None``: kept as it is)."""
    return df.select(pl.col(c) if t is None else pl.col(c).cast(t) for c, t in columns.items())


def _positive(col: str) -> pl.Expr:
    """``col`` is a number > 0 (null, NaN, 0 and negatives are not)."""
    return pl.col(col).fill_null(0.0) > 0  # NaN was made null by _conform


def _truncate(expr: pl.Expr, n: int = NAME_CHARS) -> pl.Expr:
    return pl.when(expr.str.len_chars() > n).then(expr.str.slice(0, n - 1) + "…").otherwise(expr)


def _truncate_str(s: str | None, n: int = NAME_CHARS) -> str:
    s = s or ""
    return s if len(s) <= n else s[: n - 1] + "…"


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
    return _typed(
        zero.sort("duration_ns", descending=True, nulls_last=True, maintain_order=True),
        {
            "run_id": pl.String(),
            "kernel_id": pl.Int64(),
            "name": pl.String(),
            "short_name": pl.String(),
            "duration_ns": pl.Float64(),
            "share_of_time": pl.Float64(),
            "total_share_of_time": pl.Float64(),
            "reason": None,
        },
    )


# --------------------------------------------------------------------------------------------------- rows


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
        pl.col("above_roof").fill_null(False),
        pl.col("fraction_of_roof").fill_null(float("nan")).alias("_f"),
    )
    long = _typed(
        long,
        {
            "run_id": pl.String(),
            "kernel_id": pl.Int64(),
            "name": None,
            "kernel": None,
            "short_name": pl.String(),
            "nvtx_path": pl.String(),
            "precision": pl.String(),
            "level": None,
            "ai": pl.Float64(),
            "achieved_flops_per_s": pl.Float64(),
            "attainable_level": pl.Float64(),
            "attainable_flops_per_s": pl.Float64(),
            "fraction_of_roof": pl.Float64(),
            "bound": pl.String(),
            "duration_ns": pl.Float64(),
            "flops": pl.Float64(),
            "bytes_level": pl.Float64(),
            "above_roof": None,
            "flags": None,
            "flagged": None,
        },
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
