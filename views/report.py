"""The scheduled report's data: which runs, and per run the tables and views its section shows (no charts here)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from rooflake.queries import connect, fetch
from rooflake.schema import RooflakeError, RunNotFoundError, UsageError
from rooflake.views.compare import Comparison, compare
from rooflake.views.runs import run_info
from rooflake.views.time_roofline import TimeRoofline, launch_overheads, time_roofline

TOP = 10


@dataclass(frozen=True)
class RunReport:
    """One run's section of the report.

    - ``run_id``; ``run``: its ``runs`` row (dict).
    - ``points``, ``ceilings``: its kernel_roofline and run_ceilings rows (see :mod:`rooflake.views.roofline`).
    - ``top_layers``: layer, launches, gpu_time_ns (ns), share_of_gpu_time, flops_per_s (FLOP/s) of the
      :data:`TOP` depth-1 layers with the most GPU time; ``top_kernels``: name, launches, kernel_time_ns (ns),
      share_of_kernel_time of the kernels with the most time.
    - ``checks``: kernel_id, name, check, detail (physics_checks findings).
    - ``time``: the run's time-based roofline (:class:`TimeRoofline`, kernels at DRAM), or None with ``time_note``
      saying why.
    - ``previous``: the latest earlier run with the same labels, or None; ``comparison``: this run compared with it
      (:class:`Comparison`), or None with ``comparison_note`` saying why it was skipped when there was one.
    """

    run_id: str
    run: dict[str, Any]
    points: Any
    ceilings: Any
    top_layers: Any
    top_kernels: Any
    checks: Any
    time: TimeRoofline | None
    time_note: str | None
    previous: str | None
    comparison: Comparison | None
    comparison_note: str | None


@dataclass(frozen=True)
class Report:
    """The runs a report covers (``run_ids``, oldest first) and one :class:`RunReport` per run (``runs``)."""

    run_ids: list[str]
    runs: list[RunReport]


def parse_since(text: str) -> timedelta:
    """``30m``, ``24h``, ``7d`` -> a timedelta. Raises :class:`UsageError` on anything else."""
    units = {"m": "minutes", "h": "hours", "d": "days"}
    num, unit = text[:-1], text[-1:]
    if unit not in units or not num.replace(".", "", 1).isdigit():
        raise UsageError(f"--since {text!r}: use a number and m, h or d (e.g. 24h)")
    return timedelta(**{units[unit]: float(num)})


def select_runs(
    store: Any,
    *,
    since: timedelta | None = None,
    run_ids: list[str] | None = None,
    where: dict[str, str] | None = None,
) -> list[str]:
    """Run ids for a report, oldest first: the given ids (prefixes), or those ingested within ``since`` (default:
    all), keeping runs whose labels hold every ``where`` pair. Raises :class:`RunNotFoundError`."""
    from rooflake.store import Store

    where = where or {}
    labels = {"label_keys": sorted(where), "label_values": [where[k] for k in sorted(where)]}
    epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
    cutoff = datetime.now(timezone.utc) - since if since and not run_ids else epoch
    given = [store.resolve(r) for r in run_ids or []]
    scope = Store(store.root, only_runs=given) if run_ids else store  # given runs: read only their files
    picked = fetch(connect(scope), "report_runs", {"since": cutoff, **labels})["run_id"].to_pylist()
    if run_ids:
        keep = set(picked)
        ids = [rid for rid in given if rid in keep]
    else:
        ids = picked
    if not ids:
        raise RunNotFoundError(f"no run in store {store.root} matches the report's selection")
    return ids


def previous_runs(store: Any, ids: list[str]) -> dict[str, str | None]:
    """For each of ``ids``, the latest earlier run with the same (non-empty) labels, or None (step
    ``previous_run``)."""
    rows = fetch(connect(store), "previous_run", {"run_ids": ids}).to_pylist()
    return {r["run_id"]: r["previous_run_id"] for r in rows}


def report(
    store: Any,
    *,
    since: str | None = None,
    run_ids: list[str] | None = None,
    where: dict[str, str] | None = None,
) -> Report:
    """The data of a report over the runs :func:`select_runs` picks (``since``: ``30m``, ``24h``, ``7d``), each with
    the previous run of its labels: :func:`report_runs` with every run read. Raises as :func:`report_runs`."""
    ids, runs = report_runs(store, since=since, run_ids=run_ids, where=where)
    return Report(ids, list(runs))


def report_runs(
    store: Any,
    *,
    since: str | None = None,
    run_ids: list[str] | None = None,
    where: dict[str, str] | None = None,
) -> tuple[list[str], Iterator[RunReport]]:
    """The run ids of a report (oldest first) and their :class:`RunReport` one at a time, each read when it is
    asked for (``rl report`` renders a run's charts while the next runs are read). The selection, the previous
    runs, the launch overheads and the queries whose cost grows with every run read (kernel_roofline,
    physics_checks, run_ceilings: once for all runs) are done before this returns, so it raises
    :class:`UsageError` (bad ``since``) and :class:`RunNotFoundError` (no run selected) itself. Reads only those
    runs' files."""
    from rooflake.store import Store

    ids = select_runs(store, since=parse_since(since) if since else None, run_ids=run_ids, where=where)
    previous = previous_runs(store, ids)
    reads = sorted(set(ids) | {p for p in previous.values() if p})
    part = Store(store.root, only_runs=reads)  # views over just the runs the report reads
    overheads = launch_overheads(part, ids)
    con = connect(part)
    every = {"run_id": ids}
    shared = {
        name: fetch(con, name, filters=every)
        for name in ("kernel_roofline", "physics_checks", "run_ceilings")
    }
    runs = (
        run_report(
            part, rid, previous.get(rid), overheads[rid], tables={n: _of(t, rid) for n, t in shared.items()}
        )
        for rid in ids
    )
    return ids, runs


def _of(table: Any, run_id: str) -> Any:
    """The rows of ``run_id`` (in their order)."""
    import pyarrow.compute as pc

    return table.filter(pc.equal(table["run_id"], run_id))


def run_report(
    store: Any,
    run_id: str,
    previous: str | None = None,
    overhead: Any = None,
    tables: dict[str, Any] | None = None,
) -> RunReport:
    """One run's :class:`RunReport` (``run_id`` a full id); ``previous``: the run to compare it with; ``overhead``:
    the t_o of its time-based roofline (:class:`LaunchOverhead`; None: derived); ``tables``: the run's rows of
    kernel_roofline, physics_checks and run_ceilings when the caller has them (else they are fetched)."""
    con = connect(store)
    p = {"run_id": run_id, "top": TOP}
    given = tables or {}
    mine = {
        n: given[n] if n in given else fetch(con, n, filters={"run_id": run_id})
        for n in ("kernel_roofline", "physics_checks", "run_ceilings")
    }
    time, time_note = None, None
    try:
        time = time_roofline(store, run_id, launch_overhead_ns=overhead)
    except RooflakeError as e:
        time_note = f"no time-based roofline: {e}"
    comparison, comparison_note = None, None
    if previous:
        try:
            comparison = compare(store, previous, run_id)
        except RooflakeError as e:
            comparison_note = f"no comparison with the previous run of the same labels {previous}: {e}"
    return RunReport(
        run_id,
        run_info(con, run_id),
        mine["kernel_roofline"],
        mine["run_ceilings"],
        fetch(con, "top_layers", p),
        fetch(con, "top_kernels", p),
        mine["physics_checks"].select(["kernel_id", "name", "check", "detail"]),
        time,
        time_note,
        previous,
        comparison,
        comparison_note,
    )
