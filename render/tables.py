"""Kernel rows of the roofline chart: which rows a chart draws, one row per (kernel, level), and the kernels
without FLOPs (:func:`zero_flop_table`). No I/O, no drawing.

Inputs are rows of the ``kernel_roofline`` query (pyarrow.Table or polars.DataFrame); column checks are in
:mod:`rooflake.render.inputs`, text formats in :mod:`rooflake.render.formats`.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from rooflake.render.formats import flags_text, truncate
from rooflake.render.inputs import Table, conform, frame, positive, typed
from rooflake.render.marks import LEVEL_LABEL, LEVEL_ORDER
from rooflake.render.rows import LONG_COLUMNS

__all__ = ["has_flops", "has_time", "kernel_keys", "level_points", "select_rows", "zero_flop_table"]

#: The long frame's columns: the dict path's (:data:`rooflake.render.rows.LONG_COLUMNS`) with polars types
_LONG_COLUMNS: dict[str, pl.DataType | None] = {
    c: None if t is None else {str: pl.String(), int: pl.Int64(), float: pl.Float64()}[t]
    for c, t in LONG_COLUMNS.items()
}
_ZERO_COLUMNS: dict[str, pl.DataType | None] = {
    "run_id": pl.String(),
    "kernel_id": pl.Int64(),
    "name": pl.String(),
    "short_name": pl.String(),
    "duration_ns": pl.Float64(),
    "share_of_time": pl.Float64(),
    "total_share_of_time": pl.Float64(),
    "reason": None,
}


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
    - ``reason`` (str): ``zero FLOPs`` (every precision counted, all 0), ``0 FLOPs where counted, no counter for
      tensor, fp16`` (not a zero-FLOP kernel for sure: an int8 GEMM whose Tensor-Core counts the report lacks;
      from the optional ``flops_uncounted`` column), ``no FLOP counters``, or ``failed replay (NaN values)``
      (flag ``nan_duration`` in the optional ``flags`` column)

    Raises ``ValueError`` if a needed column is missing, ``TypeError`` for another input type.
    """
    df = conform(
        frame(points, "points"),
        ("run_id", "kernel_id", "name", "duration_ns", "flops"),
        {"short_name": pl.String(), "flags": pl.List(pl.String()), "flops_uncounted": pl.List(pl.String())},
        "points",
    )
    per_kernel = df.group_by("run_id", "kernel_id", maintain_order=True).agg(
        pl.col("name").first(),
        pl.col("short_name").first(),
        pl.col("duration_ns").drop_nulls().first(),
        (pl.col("flops").fill_null(0.0) > 0).any().alias("_has_flops"),
        pl.col("flops").is_not_null().any().alias("_has_counters"),
        pl.col("flags").first().list.contains("nan_duration").fill_null(False).alias("_failed"),
        pl.col("flops_uncounted").first().alias("_uncounted"),
    )
    zero = _with_shares(per_kernel).sort("duration_ns", descending=True, nulls_last=True, maintain_order=True)
    return typed(zero, _ZERO_COLUMNS)


def _with_shares(per_kernel: pl.DataFrame) -> pl.DataFrame:
    """The kernels of ``per_kernel`` without FLOPs, with their share of their run's time, the run's zero-FLOP
    share and the reason (see :func:`zero_flop_table`)."""
    totals = per_kernel.group_by("run_id").agg(pl.col("duration_ns").sum().alias("_run_ns"))
    return (
        per_kernel.filter(~pl.col("_has_flops"))
        .join(totals, on="run_id", how="left")
        .with_columns(
            pl.when(pl.col("_run_ns") > 0)
            .then(pl.col("duration_ns") / pl.col("_run_ns"))
            .alias("share_of_time"),
            pl.when(pl.col("_failed"))
            .then(pl.lit("failed replay (NaN values)"))
            .when(~pl.col("_has_counters"))
            .then(pl.lit("no FLOP counters"))
            .when(pl.col("_uncounted").list.len().fill_null(0) > 0)
            .then(pl.lit("0 FLOPs where counted, no counter for ") + pl.col("_uncounted").list.join(", "))
            .otherwise(pl.lit("zero FLOPs"))
            .alias("reason"),
        )
        .with_columns(pl.col("share_of_time").sum().over("run_id").alias("total_share_of_time"))
        .with_columns(
            pl.when(pl.col("_run_ns") > 0).then(pl.col("total_share_of_time")).alias("total_share_of_time")
        )
    )


def select_rows(df: pl.DataFrame, precision: str) -> pl.DataFrame:
    """The rows a roofline of ``precision`` draws: that precision's, or with ``all`` each kernel's dominant one."""
    if precision == "all":
        return df.filter(pl.col("is_dominant").fill_null(False))
    return df.filter(pl.col("precision") == precision)


def has_flops() -> pl.Expr:
    """The row counted FLOPs (> 0, not flagged ``zero_flops``)."""
    return positive("flops") & ~pl.col("zero_flops").fill_null(False)


def has_time() -> pl.Expr:
    """The row has a usable duration and achieved FLOP/s (both > 0)."""
    return positive("achieved_flops_per_s") & positive("duration_ns")


def kernel_keys(df: pl.DataFrame) -> set[tuple[Any, Any]]:
    """The distinct (run_id, kernel_id) of ``df``."""
    return set(df.select("run_id", "kernel_id").iter_rows())


def _drawable_base(rows: pl.DataFrame) -> tuple[pl.DataFrame, list[tuple[str, int, str]]]:
    """Rows with FLOPs and a duration, display columns added; and the reasons the others are left out."""
    reasons: list[tuple[str, int, str]] = []
    n_no_flops = rows.filter(~has_flops()).height
    n_no_time = rows.filter(has_flops() & ~has_time()).height
    if n_no_flops:
        reasons.append(("flops", n_no_flops, "have no FLOPs (zero or not counted)"))
    if n_no_time:
        reasons.append(("time", n_no_time, "have no usable duration (NaN, missing or 0)"))
    name = pl.col("name").cast(pl.String)
    base = rows.filter(has_flops() & has_time()).with_columns(
        truncate(name).alias("name"),
        pl.coalesce(pl.col("short_name"), truncate(name, 40)).alias("kernel"),
        flags_text(rows.schema["flags"]).alias("flags"),
    )
    return base, reasons


def _level_rows(base: pl.DataFrame, lv: str) -> tuple[pl.DataFrame, tuple[str, int, str] | None]:
    """The rows of ``base`` with an AI at level ``lv`` as points of that level; why the others have none."""
    ok = positive(f"ai_{lv}")
    missing = base.filter(~ok)
    reason = None
    if missing.height:
        no_counter = missing.filter(pl.col(f"bytes_{lv}").is_null()).height
        what = f"have no {LEVEL_LABEL[lv]} bytes"
        if no_counter == missing.height:
            what += " (counter missing)"
        elif no_counter == 0:
            what += " (0 bytes)"
        reason = (LEVEL_LABEL[lv], missing.height, what)
    points = base.filter(ok).with_columns(
        pl.lit(LEVEL_LABEL[lv]).alias("level"),
        pl.col(f"ai_{lv}").alias("ai"),
        pl.col(f"bytes_{lv}").alias("bytes_level"),
        pl.col(f"attainable_{lv}").alias("attainable_level"),
    )
    return points, reason


def level_points(rows: pl.DataFrame, levels: list[str]) -> tuple[pl.DataFrame, list[tuple[str, int, str]]]:
    """Long frame of drawable (kernel, level) points, and why the others cannot be drawn.

    ``rows``: conformed ``kernel_roofline`` rows (:data:`rooflake.render.inputs.POINT_OPTIONAL`); ``levels``:
    l1 | l2 | dram. Columns of the points: :data:`_LONG_COLUMNS` (``level`` L1|L2|DRAM, ``ai`` its AI,
    ``bytes_level``, ``attainable_level``, ``kernel`` the short name, ``flags`` as text, ``flagged``); DRAM rows
    first, so that the small L1 marks are drawn on top. The reasons are ``(what, n_rows, text)`` with ``what`` in
    ``flops``, ``time`` or a level (``L2``) and ``text`` a phrase to follow the count, e.g.
    ``("L2", 4, "have no L2 bytes (0 bytes)")``.
    """
    base, reasons = _drawable_base(rows)
    parts = []
    for lv in sorted(levels, key=lambda lv: -LEVEL_ORDER.index(lv)):
        points, reason = _level_rows(base, lv)
        reasons += [reason] if reason else []
        parts.append(points)
    long = pl.concat(parts, how="vertical_relaxed").with_columns(
        (pl.col("above_roof").fill_null(False) | (pl.col("flags") != "")).alias("flagged"),
        pl.col("above_roof").fill_null(False),
    )
    return typed(long, _LONG_COLUMNS), reasons
