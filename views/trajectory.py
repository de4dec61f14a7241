"""Roofline trajectories (Javed, Ibrahim, Lu 2019; Ibrahim, Williams, Oliker): how each NVTX layer or kernel moves
on the hierarchical roofline as one run label varies across runs that agree on their other labels."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rooflake.queries import check_regex, connect, fetch
from rooflake.schema import RooflineDataError, UsageError
from rooflake.schema.catalog import COLLECT_HINT
from rooflake.views.ceilings import sweep_roofs
from rooflake.views.display import Displayed

GRAINS = ("layer", "kernel")
LEVELS = ("dram", "l2", "l1", "all")


@dataclass(frozen=True)
class Trajectory(Displayed):
    """The trajectories of one sweep.

    - ``vary``: the label that varies; ``where``: other labels the runs carry; ``grain``: layer | kernel;
      ``level``: l1 | l2 | dram | all; ``depth``: NVTX depth of a layer; ``layer``: the regex entities matched.
    - ``rows``: trajectory rows (columns in queries/trajectory.sql: series, entity_kind, entity, label, level,
      run_id, value, step, precision, flops (FLOP), bytes (byte), duration_ns (ns), ai (FLOP/byte), flops_per_s,
      peak_flops_per_s, attainable_flops_per_s (FLOP/s), bw (byte/s), above_roof, flags, ...), ordered by series,
      entity, level, step.
    - ``ceilings``: run_ceilings rows of the runs in ``rows``.
    - ``series``: the series kept (two values of ``vary`` or more); ``single``: series left out (one value only).
    - ``runs``: how many runs the rows hold; ``undrawn``: the runs of the series kept that hold no point (no
      roofline counters, or none of the entities asked).
    """

    vary: str
    grain: str
    level: str
    depth: int
    rows: Any
    ceilings: Any
    series: list[str]
    single: list[str]
    runs: int
    where: dict[str, str] = field(default_factory=dict)
    layer: str | None = None
    undrawn: list[str] = field(default_factory=list)


def trajectory(
    store: Any,
    vary: str,
    where: dict[str, str] | None = None,
    layer: str | None = None,
    level: str = "dram",
    grain: str = "layer",
    depth: int = 1,
    ceilings: str = "default",
) -> Trajectory:
    """The trajectories of the layers (``grain='layer'``, NVTX depth ``depth``) or kernels (``grain='kernel'``:
    identity = NVTX path, name, occurrence) as label ``vary`` changes across runs sharing their other labels,
    restricted to runs carrying the ``where`` labels and to entities whose NVTX path matches the regex ``layer``
    (DuckDB ``regexp_matches``, a partial match), at memory ``level`` (l1 | l2 | dram | all). ``ceilings``
    (default | report | datasheet | ert | measured): the source of each run's roofs, as ``rl roofline --ceilings``
    takes it (:func:`rooflake.views.ceilings.sweep_roofs`); peak, attainable and ``Trajectory.ceilings`` follow it.

    Series with fewer than two distinct values of ``vary`` are left out (``Trajectory.single``). Raises
    :class:`UsageError` (``where`` names ``vary``; unknown ``grain``, ``level`` or ``ceilings``),
    :class:`RooflineDataError` (no run carries the label, fewer than two values, nothing to draw, a source without
    ceilings for a run's machine), :class:`BadArgument` (``layer`` is not a regular expression DuckDB accepts).
    """
    where = dict(where or {})
    if grain not in GRAINS:
        raise UsageError(f"unknown --by {grain!r} (choose one of: {', '.join(GRAINS)})")
    if level not in LEVELS:
        raise UsageError(f"unknown level {level!r} (choose one of: {', '.join(LEVELS)})")
    if vary in where:
        raise UsageError(
            f"--where {vary}={where[vary]}: {vary!r} is the varied label (--vary), it cannot be fixed"
        )
    con = connect(store)
    check_regex(con, layer, "--layer")
    labels = {"label_keys": sorted(where), "label_values": [where[k] for k in sorted(where)]}
    runs = fetch(con, "trajectory_runs", {"vary": vary, **labels}).to_pylist()
    kept, single = _series(con, vary, where, runs)
    params = {
        "vary": vary,
        "depth": depth,
        "entity_kind": grain,
        "series": kept,
        "level": None,
        "layer": layer,
    }
    params.update(labels, level=None if level == "all" else level)
    swept = sorted({r["run_id"] for r in runs if r["series"] in kept})
    roofs, roof_rows = sweep_roofs(store, swept, ceilings)
    rows = fetch(con, "trajectory_points", params, tables=roofs, what=f"trajectory of {vary}")
    if not _drawable(rows):
        raise _nothing_to_draw(grain, depth, layer, level, len(swept), vary, where)
    run_ids = sorted(set(rows.column("run_id").to_pylist()))
    drawn = roof_rows.take([i for i, r in enumerate(roof_rows.column("run_id").to_pylist()) if r in run_ids])
    undrawn = sorted(set(swept) - set(run_ids))  # (runs of the sweep without a point: no roofline counters)
    return Trajectory(
        vary, grain, level, depth, rows, drawn, kept, single, len(run_ids), where, layer, undrawn
    )


def _nothing_to_draw(
    grain: str, depth: int, layer: str | None, level: str, n_runs: int, vary: str, where: dict[str, str]
) -> RooflineDataError:
    """The error of a sweep of ``n_runs`` runs where no entity has a point."""
    what = f"layer at depth {depth}" if grain == "layer" else "kernel"
    match = f" matching {layer!r}" if layer else ""
    return RooflineDataError(
        f"no {what}{match} has FLOPs, bytes at {'any level' if level == 'all' else level.upper()} and a "
        f"duration in the {n_runs} runs varying {vary}{_where_text(where)}: nothing to draw. To collect the "
        f"counters, {COLLECT_HINT}."
    )


def _where_text(where: dict[str, str]) -> str:
    return "".join(f" with {k}={v}" for k, v in sorted(where.items()))


def _series(
    con: Any, vary: str, where: dict[str, str], runs: list[dict[str, Any]]
) -> tuple[list[str], list[str]]:
    """The series with two values of ``vary`` or more, and those with one; a :class:`RooflineDataError` when no run
    carries the label or no series has two values."""
    if not runs:
        keys = [r["key"] for r in fetch(con, "label_keys").to_pylist()]
        raise RooflineDataError(
            f"no run{_where_text(where)} carries the label {vary!r} (labels in the store: "
            f"{', '.join(keys) or 'none'}; label runs with `rl ingest -l {vary}=VALUE`)"
        )
    values: dict[str, set[str]] = {}
    for r in runs:
        values.setdefault(r["series"], set()).add(r["value"])
    kept = sorted(s for s, v in values.items() if len(v) >= 2)
    single = sorted(s for s, v in values.items() if len(v) < 2)
    if not kept:
        shown = "; ".join(f"{s or '(no other label)'}: {vary}={', '.join(sorted(values[s]))}" for s in single)
        raise RooflineDataError(
            f"label {vary!r} takes fewer than 2 values among runs sharing their other labels{_where_text(where)} "
            f"({shown}): a trajectory needs at least two runs that differ only in {vary}"
        )
    return kept, single


def _drawable(rows: Any) -> bool:
    """Some point has AI > 0 and FLOP/s > 0 (NaN > 0 is False)."""
    return any(
        (r["ai"] or 0) > 0 and (r["flops_per_s"] or 0) > 0
        for r in rows.select(["ai", "flops_per_s"]).to_pylist()
    )
