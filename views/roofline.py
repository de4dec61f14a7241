"""The hierarchical roofline of one run (Yang et al., "Hierarchical Roofline analysis for GPUs", 2020; ncu
SpeedOfLight_Hierarchical*RooflineChart): one point per kernel (query ``kernel_roofline``) or per NVTX layer (step
``layer_roofline``) and precision, against the run's ceilings (``run_ceilings``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rooflake.queries import connect, fetch
from rooflake.schema import RooflineDataError, UsageError
from rooflake.schema.catalog import COLLECT_HINT
from rooflake.views.layers import RunMatch, match_runs
from rooflake.views.runs import run_info

LEVELS = ("dram", "l2", "l1", "all")
GRAINS = ("kernel", "layer")
_QUANTITIES = ["flops_fp64", "flops_fp32", "flops_fp16", "flops_tensor"]


@dataclass(frozen=True)
class Roofline:
    """The roofline of one run.

    - ``run_id``: full run id; ``run``: its ``runs`` row (dict).
    - ``grain``: ``kernel`` or ``layer``; ``depth``: the NVTX depth of a layer.
    - ``points``: one row per kernel (or layer) x precision with FLOPs, kernel_roofline's columns: identity (run_id,
      kernel_id, name, short_name, nvtx_path; for layers kernel_id = layer number and the names = the layer),
      precision, is_dominant, duration_ns (ns), flops (FLOP), bytes_l1/l2/dram (byte), ai_l1/l2/dram (FLOP/byte),
      achieved_flops_per_s, peak_flops_per_s (FLOP/s), bw_l1/l2/dram (byte/s), ridge_* (FLOP/byte),
      attainable_* and attainable_flops_per_s (FLOP/s), fraction_of_roof, zero_flops, bound,
      levels_without_roof, above_roof, flags.
    - ``ceilings``: run_ceilings rows (run_id, machine_key, ceiling, kind, value in byte/s or FLOP/s, ...) of the run
      that holds the counters.
    - ``matched``: for layers of an nsys run with ``with_run``, the :class:`RunMatch` that lent the counters.
    """

    run_id: str
    run: dict[str, Any]
    grain: str
    depth: int
    points: Any
    ceilings: Any
    matched: RunMatch | None = None


def roofline(
    store: Any,
    run_id: str | None = None,
    level: str = "dram",
    *,
    grain: str = "kernel",
    depth: int = 1,
    with_run: str | None = None,
) -> Roofline:
    """The roofline of ``run_id`` (a unique prefix; None = the latest run) per kernel, or per NVTX layer at
    ``depth`` with ``grain='layer'`` (with ``with_run``: an nsys run whose layers take the FLOPs/bytes of ncu run
    ``with_run``, time-weighted by nsys's real durations; Wang et al., arXiv 2009.04598).

    ``level`` (dram | l2 | l1 | all) is the memory level the caller draws: a kernel roofline needs a kernel with FLOPs
    and bytes there. Raises :class:`RunNotFoundError`, :class:`UsageError` (bad ``level``, ``grain`` or
    ``with_run`` without layers), :class:`RooflineDataError` (no point has the counters: the message names the
    missing metrics, from ``kernels.provenance``, and how to collect them).
    """
    if level not in LEVELS:
        raise UsageError(f"unknown level {level!r} (choose one of: {', '.join(LEVELS)})")
    if grain not in GRAINS:
        raise UsageError(f"unknown grain {grain!r} (choose one of: {', '.join(GRAINS)})")
    if with_run is not None and grain == "kernel":
        raise UsageError(
            "an ncu run lends its counters to the layers of an nsys run: use layers (--by layer)"
        )
    run_id = store.resolve(run_id)
    if grain == "layer":
        return _layer_roofline(store, run_id, depth, with_run)
    con = connect(store)
    run = run_info(con, run_id)
    points = fetch(con, "kernel_roofline", filters={"run_id": run_id})
    levels = ["l1", "l2", "dram"] if level == "all" else [level]
    if not _has_counters(points, levels):
        rows = fetch(con, "missing_counters", {"run_id": run_id, "quantities": _QUANTITIES + _bytes(levels)})
        missing = "; ".join(f"{r['quantity']}: {r['reason'][5:].strip()}" for r in rows.to_pylist())
        raise RooflineDataError(
            f"run {run_id} ({run['source_path']}) has no counters for a {level.upper()} roofline: "
            f"{missing or 'no kernel has FLOP and byte counters'}. To collect them, {COLLECT_HINT}."
        )
    ceilings = fetch(con, "run_ceilings", filters={"run_id": run_id})
    return Roofline(run_id, run, grain, depth, points, ceilings)


def _bytes(levels: list[str]) -> list[str]:
    return [f"bytes_{lv}" for lv in levels]


def _has_counters(points: Any, levels: list[str]) -> bool:
    """Some point has FLOPs and bytes at one of ``levels`` (kernel_roofline rows exist only where FLOPs do)."""
    import pyarrow.compute as pc

    if points.num_rows == 0:
        return False
    has_bytes = pc.is_valid(points[f"bytes_{levels[0]}"])
    for lv in levels[1:]:
        has_bytes = pc.or_(has_bytes, pc.is_valid(points[f"bytes_{lv}"]))
    return bool(pc.any(pc.and_(pc.is_valid(points["flops"]), has_bytes)).as_py())


def _layer_roofline(store: Any, run_id: str, depth: int, with_run: str | None) -> Roofline:
    con = connect(store)
    matched = match_runs(store, run_id, with_run) if with_run is not None else None
    counters_run = matched.ncu_run if matched else run_id
    points = fetch(
        con,
        "layer_roofline",
        {"run_id": run_id, "depth": depth, "counters_run": counters_run},
        tables={"kernels": matched.store_kernels} if matched else None,
    )
    if points.num_rows == 0:
        hint = (
            "this run has no FLOP counters (an nsys run: add --with NCU_RUN, an ncu run of the same program)"
            if with_run is None
            else f"no kernel of run {run_id} matched a kernel of run {counters_run} with counters"
        )
        raise RooflineDataError(
            f"run {run_id}: no layer at depth {depth} has FLOPs: {hint}. To collect them, {COLLECT_HINT}."
        )
    ceilings = fetch(con, "run_ceilings", filters={"run_id": counters_run})
    return Roofline(run_id, run_info(con, run_id), "layer", depth, points, ceilings, matched)
