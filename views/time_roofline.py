"""The time-based roofline of one run (Wang, Yang, Farrell, Zhang, Kurth, Williams, "Time-Based Roofline for Deep
Learning Performance Analysis", arXiv 2009.04598): choose the launch overhead t_o, run the ``time_roofline`` query,
keep the grain to draw (kernels, or NVTX layers at one depth)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from rooflake.queries import connect, fetch
from rooflake.schema import BadArgument, RooflakeError, RooflineDataError, UsageError
from rooflake.schema.catalog import COLLECT_HINT
from rooflake.views.ceilings import RunRoofs, run_roofs
from rooflake.views.display import Displayed
from rooflake.views.runs import rows_where, run_info

#: t_o when neither an option nor an nsys trace gives one: 1 us. Below the GPU durations of the shortest kernels in
#: the fixture reports (ncu 3.2 us, nsys 0.9 us) and within the back-to-back gaps their nsys traces give
#: (launch_overhead: 0.64 to 2.0 us), so it never puts T_min above a real kernel's T. A placeholder, not a
#: measurement: pass --launch-overhead, or ingest an nsys trace of the same GPU.
DEFAULT_LAUNCH_OVERHEAD_NS = 1000.0
#: Fewest back-to-back pairs for a derived t_o to be used (a median of one or two gaps is noise).
MIN_PAIRS = 5
GRAINS = ("kernel", "layer")
LEVELS = ("dram", "l2", "l1")


@dataclass(frozen=True)
class LaunchOverhead:
    """A launch overhead t_o: ``value_ns`` (ns) and ``source``: ``'option'``, ``'derived from nsys run <id>'``
    (``' (same GPU: <name>)'`` when another run's), or ``'default'``."""

    value_ns: float
    source: str


@dataclass(frozen=True)
class TimeRoofline(Displayed):
    """The time-based roofline of one run.

    - ``run_id``: full run id; ``run``: its ``runs`` row (dict).
    - ``grain``: ``kernel`` or ``layer``; ``depth``: the NVTX depth of a layer; ``level``: the memory level drawn.
    - ``launch_overhead``: the :class:`LaunchOverhead` used.
    - ``rows``: every row of the ``time_roofline`` query (kernels and layers at every depth; columns in
      queries/time_roofline.sql: grain, duration_ns, flops, bytes_*, compute_time_ns, l1/l2/dram_time_ns,
      t_min_ns (ns), inefficiency, bound, ...).
    - ``points``: the rows of the grain drawn (kernels, or layers at ``depth``), same columns.
    - ``provenance``: with an ``rl estimate`` run (:func:`estimate_time_roofline`), which numbers are measured and
      which modelled; else None.
    - ``ceilings``: the roofs' rows (:func:`rooflake.views.ceilings.run_roofs`: run_ceilings' columns plus
      source_label and overlay).
    """

    run_id: str
    run: dict[str, Any]
    grain: str
    depth: int
    level: str
    launch_overhead: LaunchOverhead
    rows: Any
    points: Any
    ceilings: Any
    provenance: str | None = None


def launch_overheads(store: Any, run_ids: list[str]) -> dict[str, LaunchOverhead]:
    """The t_o each of ``run_ids`` uses when none is given (step ``launch_overhead_pick``): its own (the
    ``launch_overhead`` view of an nsys run with at least :data:`MIN_PAIRS` back-to-back pairs of tiny kernels),
    else that of the nsys run of the same GPU (``runs.gpu_name``) with the most pairs, else
    :data:`DEFAULT_LAUNCH_OVERHEAD_NS`. One query for every run (the view scans every nsys kernel of the store)."""
    picked = fetch(connect(store), "launch_overhead_pick", {"run_ids": run_ids, "min_pairs": MIN_PAIRS})
    out = {r: LaunchOverhead(DEFAULT_LAUNCH_OVERHEAD_NS, "default") for r in run_ids}
    for row in picked.to_pylist():
        same = "" if row["source_run_id"] == row["run_id"] else f" (same GPU: {row['gpu_name']})"
        out[row["run_id"]] = LaunchOverhead(
            float(row["launch_overhead_ns"]), f"derived from nsys run {row['source_run_id']}{same}"
        )
    return out


def launch_overhead(store: Any, run_id: str, option_ns: float | None = None) -> LaunchOverhead:
    """The launch overhead t_o for ``run_id``: ``option_ns`` (source ``'option'``; a finite number > 0, else
    :class:`BadArgument`), else the one :func:`launch_overheads` derives."""
    if option_ns is not None:
        if not (math.isfinite(option_ns) and option_ns > 0):
            raise BadArgument(f"--launch-overhead: a number of nanoseconds > 0, not {option_ns}")
        return LaunchOverhead(float(option_ns), "option")
    return launch_overheads(store, [run_id])[run_id]


def time_rows(store: Any, run_id: str, overhead: LaunchOverhead) -> Any:
    """Rows of the ``time_roofline`` query for ``run_id`` with t_o = ``overhead`` (a ``pyarrow.Table``; columns in
    queries/time_roofline.sql). Raises :class:`QueryError` when the SQL fails."""
    return _rows(connect(store), run_id, overhead)


def _rows(con: Any, run_id: str, overhead: LaunchOverhead, tables: dict[str, Any] | None = None) -> Any:
    params = {
        "run_id": run_id,
        "launch_overhead_ns": overhead.value_ns,
        "launch_overhead_source": overhead.source,
    }
    return fetch(con, "time_roofline", params, tables=tables, what=f"time_roofline of run {run_id}")


def time_roofline(
    store: Any,
    run_id: str | None = None,
    *,
    grain: str = "kernel",
    depth: int = 1,
    level: str = "dram",
    launch_overhead_ns: float | LaunchOverhead | None = None,
    ceilings: str = "default",
) -> TimeRoofline:
    """The time-based roofline of ``run_id`` (a unique prefix; None = the latest run): one point per kernel, or per
    NVTX layer at ``depth`` with ``grain='layer'``; ``level`` (dram | l2 | l1) is the memory level drawn. t_o:
    ``launch_overhead_ns`` (a number: the user's option; a :class:`LaunchOverhead`: as given), else
    :func:`launch_overhead`. ``ceilings`` (default | report | datasheet | ert | measured | all): the source of the
    roofs P and W (:func:`rooflake.views.ceilings.run_roofs`; an nsys run, without report peaks, gets measured or
    datasheet roofs); T_min, s and the bound are against them, and ``ceilings`` holds their rows.

    Raises :class:`RunNotFoundError`, :class:`UsageError` (bad ``grain``, ``level`` or t_o),
    :class:`RooflineDataError` (no kernel has FLOPs, bytes and a duration: the message says how to collect them;
    no layer at ``depth`` has a kernel with counters).
    """
    if grain not in (*GRAINS, "op", "step"):
        raise UsageError(f"unknown grain {grain!r} (choose kernel, layer, op or step)")
    if level not in LEVELS:
        raise UsageError(f"--time draws one level: use --level {', '.join(LEVELS)} (got {level!r})")
    run_id = store.resolve(run_id)
    from rooflake.views.roofline import from_shapes

    if grain in ("op", "step") or (grain == "layer" and from_shapes(store, run_id)):
        return op_time_roofline(store, run_id, grain=grain, depth=depth, level=level,
                                launch_overhead_ns=launch_overhead_ns)  # fmt: skip
    con = connect(store)
    run = run_info(con, run_id)
    overhead = (
        launch_overhead_ns
        if isinstance(launch_overhead_ns, LaunchOverhead)
        else launch_overhead(store, run_id, launch_overhead_ns)
    )
    roofs = run_roofs(store, run_id, ceilings, info=run)
    rows = _rows(con, run_id, overhead, roofs.tables)
    points = _points(rows, run_id, run, grain, depth)
    return TimeRoofline(run_id, run, grain, depth, level, overhead, rows, points, roofs.rows)


def time_rooflines(
    store: Any,
    overheads: dict[str, LaunchOverhead],
    runs: dict[str, dict[str, Any]],
    *,
    ceilings: str = "default",
    run_ceilings: Any = None,
    roofs: dict[str, RunRoofs | RooflakeError] | None = None,
    points: Any = None,
) -> dict[str, TimeRoofline | RooflakeError]:
    """The time-based roofline (kernels, DRAM) of every run of ``overheads`` (full run ids, each with its t_o), as
    :func:`time_roofline` gives it for one run with ``launch_overhead_ns=overheads[run]``: the same
    :class:`TimeRoofline`, the same rows in the same order. One ``time_roofline`` statement serves every run
    (step ``time_roofline_runs``), so a report of N runs binds the store's files once, not N times; the roofs are
    each run's own (:func:`rooflake.views.ceilings.run_roofs` with ``ceilings``), those of a run drawn against
    another source's ceilings given to the statement as its ``kernel_roofs``. A run none of whose kernels has a
    duration, bytes and FLOPs (step ``time_roofline_drawable``) has nothing to draw against any roofs: with
    ``default`` ceilings (which never fail) neither its roofs nor its rows are asked for. ``runs``: each run's
    ``runs`` row (:func:`rooflake.views.runs.run_info`); ``run_ceilings``: the runs' run_ceilings rows when the
    caller has them; ``roofs``: each run's :func:`rooflake.views.ceilings.run_roofs` of ``ceilings`` (or the
    :class:`RooflakeError` it raised) when the caller has them (``rl report --ceilings`` draws its hierarchical
    roofline against the same), so they are not asked again. ``points``: the ``kernel_roofline`` rows of these runs
    when the caller has them (``rl report`` does), read instead of the view by ``time_roofline_drawable`` (which
    reads their FLOPs only, the same against any roofs) and, when no run is drawn against another source's
    ceilings, by ``time_roofline_runs`` (whose kernel_roofs are then the store's: ``points`` must be the view's
    rows over them). On the 10-run bench store 48 → 22 ms and 96 → 54 ms, same rows.

    Returns, per run in the order of ``overheads``, its :class:`TimeRoofline`, or the :class:`RooflakeError`
    :func:`time_roofline` raises for it (:class:`RooflineDataError`: nothing to draw; a :class:`QueryError` of the
    shared statement is every run's)."""
    con = connect(store)
    given = None if points is None else {"kernel_roofline": points}
    drawable = fetch(con, "time_roofline_drawable", {"run_ids": list(overheads)}, tables=given)
    found = {r["run_id"]: r for r in drawable.to_pylist()}
    out: dict[str, TimeRoofline | RooflakeError] = {}
    drawn: dict[str, RunRoofs] = {}
    for rid in overheads:
        try:
            drawn[rid] = _drawn_roofs(
                store, rid, found.get(rid), runs[rid], ceilings, run_ceilings, roofs or {}
            )
        except RooflakeError as e:
            out[rid] = e
    try:
        rows = _runs_rows(con, overheads, drawn, points) if drawn else None
    except RooflakeError as e:
        out.update(dict.fromkeys(drawn, e))
        rows = None
    for rid, mine in _by_run(rows, list(drawn)).items():
        try:
            points = _points(mine, rid, runs[rid], "kernel", 1)
        except RooflakeError as e:
            out[rid] = e
            continue
        out[rid] = TimeRoofline(
            rid, runs[rid], "kernel", 1, "dram", overheads[rid], mine, points, drawn[rid].rows
        )
    return {rid: out[rid] for rid in overheads}


def _drawn_roofs(
    store: Any,
    rid: str,
    found: dict[str, Any] | None,
    run: dict[str, Any],
    ceilings: str,
    run_ceilings: Any,
    given: dict[str, RunRoofs | RooflakeError],
) -> RunRoofs:
    """The roofs run ``rid`` is drawn against in :func:`time_rooflines`: those ``given`` for it, else
    :func:`rooflake.views.ceilings.run_roofs` of ``ceilings`` (asked even for a run with nothing to draw when
    ``ceilings`` is not ``default``, whose error then comes first). ``found``: its ``time_roofline_drawable`` row
    (None: the run has no kernel). Raises the :class:`RooflakeError` given or raised for its roofs, else
    :class:`RooflineDataError` when none of its kernels can be drawn."""
    drawable = found is not None and found["drawable"]
    mine = given.get(rid)
    if isinstance(mine, RooflakeError):
        raise mine
    if mine is None and (drawable or ceilings != "default"):
        own = None if run_ceilings is None else _by_run(run_ceilings, [rid])[rid]
        mine = run_roofs(store, rid, ceilings, info=run, report=own)
    if not drawable or mine is None:
        raise _nothing_to_draw(rid, run, found["n_kernels"] if found is not None else 0)
    return mine


def _runs_rows(
    con: Any, overheads: dict[str, LaunchOverhead], roofs: dict[str, RunRoofs], points: Any = None
) -> Any:
    """Step ``time_roofline_runs`` for the runs of ``roofs``; the runs drawn against another source's ceilings
    (``RunRoofs.tables``) read their ``kernel_roofs`` rows, the others the store's; when none is, the statement
    reads ``points`` (kernel_roofline's rows of these runs over the store's kernel_roofs) if given."""
    ids = list(roofs)
    params = {
        "run_ids": ids,
        "launch_overheads_ns": [overheads[r].value_ns for r in ids],
        "launch_overhead_sources": [overheads[r].source for r in ids],
    }
    tables = chosen_kernel_roofs(con, ids, roofs)
    if tables is None and points is not None:
        tables = {"kernel_roofline": points}
    return fetch(con, "time_roofline_runs", params, tables=tables, what=f"time_roofline of {len(ids)} run(s)")


def chosen_kernel_roofs(con: Any, ids: list[str], roofs: dict[str, Any]) -> dict[str, Any] | None:
    """``tables`` for :func:`rooflake.queries.fetch` that shadow ``kernel_roofs`` for the runs ``ids`` at once: the
    runs of ``roofs`` drawn against another source's ceilings (:class:`RunRoofs` with ``tables``: step
    ``chosen_kernel_roofs``'s rows) read theirs, every other run of ``ids`` (on its report's own peaks, or without
    a :class:`RunRoofs` in ``roofs``) the store's; None when no run has chosen roofs (the store's view serves).
    kernel_roofs' columns (run_id, kernel_id, bw_l1/l2/dram in byte/s, peak_fp64/fp32/fp16/tensor in FLOP/s,
    tensor_roof)."""
    import pyarrow as pa

    def chosen(rid: str) -> Any:
        r = roofs.get(rid)
        return r.tables["kernel_roofs"] if isinstance(r, RunRoofs) and r.tables else None

    picked = [t for t in (chosen(r) for r in ids) if t is not None]
    if not picked:
        return None
    own = [r for r in ids if chosen(r) is None]
    store_rows = fetch(con, "kernel_roofs", filters={"run_id": own}) if own else picked[0].slice(0, 0)
    schema = store_rows.schema
    return {"kernel_roofs": pa.concat_tables([store_rows, *(t.cast(schema) for t in picked)])}


def _by_run(rows: Any, ids: list[str]) -> dict[str, Any]:
    """``rows`` (a table with a ``run_id`` column, each run's rows together) split by run, in their order."""
    if rows is None:
        return {}
    return {rid: rows_where(rows, "run_id", rid) for rid in ids}


def _points(rows: Any, run_id: str, run: dict[str, Any], grain: str, depth: int) -> Any:
    """The rows of ``grain`` to draw (Arrow, as the query gave them), or a :class:`RooflineDataError` that says why
    there are none."""
    import polars as pl
    import pyarrow.compute as pc

    kernels = rows_where(rows, "grain", "kernel")
    df = pl.from_arrow(kernels)
    assert isinstance(df, pl.DataFrame)
    usable = df.filter(
        (pl.col("flops").fill_nan(None) >= 0)
        & pl.any_horizontal(pl.col(f"bytes_{lv}").fill_nan(None) > 0 for lv in ("l1", "l2", "dram"))
        & (pl.col("duration_ns").fill_nan(None) > 0)
        & pl.col("t_min_ns").is_not_null()
    )
    if usable.height == 0:
        raise _nothing_to_draw(run_id, run, kernels.num_rows)
    if grain == "kernel":
        return kernels
    layers = rows_where(rows_where(rows, "grain", "layer"), "depth", depth)
    if layers.num_rows == layers["t_min_ns"].null_count:
        deepest = pc.max(rows["depth"]).as_py() or 0
        raise RooflineDataError(
            f"run {run_id}: no NVTX layer at depth {depth} has a kernel with counters "
            f"(the deepest layers are at depth {deepest})"
        )
    return layers


def _nothing_to_draw(run_id: str, run: dict[str, Any], n_kernels: int) -> RooflineDataError:
    return RooflineDataError(
        f"run {run_id} ({run['source_path']}): no kernel has FLOPs, bytes and a duration with a roof "
        f"({n_kernels} kernel(s)), so there is no time-based roofline to draw. To collect them, "
        f"{COLLECT_HINT}; for an nsys run, draw `rl roofline --by layer --with NCU_RUN` instead."
    )


def op_time_roofline(
    store: Any,
    run_id: str | None,
    *,
    grain: str = "op",
    depth: int = 1,
    level: str = "dram",
    launch_overhead_ns: float | LaunchOverhead | None = None,
) -> TimeRoofline:
    """The time-based roofline of a trace run per recorded op or NVTX layer from its recorded shapes (the points of
    :func:`rooflake.views.ops.op_roofline`: time measured, FLOPs and compulsory bytes modelled, the datasheet's
    roofs) through step ``estimate_layer_time_roofline``: T_min = max(F/P, Q/W_DRAM, n·t_o) with n the kernels
    launched under the op (a CPU trace: 1 per op), s = T/T_min and the bound (Wang et al., arXiv 2009.04598).
    Returns a :class:`TimeRoofline` (``provenance`` says what is measured and what modelled). Raises as
    :func:`rooflake.views.ops.op_roofline`."""
    from rooflake.views.ops import op_roofline

    v = op_roofline(store, run_id, grain=grain, depth=depth, level=level)
    overhead = (
        launch_overhead_ns
        if isinstance(launch_overhead_ns, LaunchOverhead)
        else launch_overhead(store, v.run_id, launch_overhead_ns)
    )
    params = {
        "launch_overhead_ns": overhead.value_ns,
        "launch_overhead_source": overhead.source,
        "depth": depth,
    }
    rows = fetch(connect(store), "estimate_layer_time_roofline", params, tables={"layer_points": v.points})
    return TimeRoofline(v.run_id, v.run, grain, depth, level, overhead, rows, rows, v.ceilings, v.provenance)


def estimate_time_roofline(
    store: Any,
    run_id: str | None,
    estimates_run: str,
    *,
    depth: int = 1,
    level: str = "dram",
    launch_overhead_ns: float | None = None,
    ceilings: str = "default",
) -> TimeRoofline:
    """The time-based roofline of the layers of Nsight Systems run ``run_id`` at NVTX ``depth`` with the work of
    ``rl estimate`` run ``estimates_run`` (step ``estimate_layer_time_roofline`` over the points of
    :func:`rooflake.views.roofline.estimate_roofline`: time per step measured, FLOPs and compulsory bytes per step
    modelled, the same roofs, from source ``ceilings`` as it takes them): T_min = max(F/P, Q_l/W_l, n·t_o) with n the launches (GPU) or range calls (CPU) per
    step, s = T/T_min and the bound (Wang et al., arXiv 2009.04598). t_o as :func:`launch_overhead` picks it (a CPU
    run has no launches to derive one from: the option, else the 1 µs default, which the chart names).

    Returns a :class:`TimeRoofline` whose ``rows`` and ``points`` are the layer rows (time_roofline's columns) and
    ``provenance`` says what is measured and what modelled. Raises as :func:`rooflake.views.roofline.estimate_roofline`,
    and :class:`UsageError` for a bad ``level`` (dram | l2 | l1) or t_o.
    """
    from rooflake.views.roofline import estimate_roofline

    if level not in LEVELS:
        raise UsageError(f"--time draws one level: use --level {', '.join(LEVELS)} (got {level!r})")
    v = estimate_roofline(store, run_id, estimates_run, depth=depth, level=level, ceilings=ceilings)
    overhead = launch_overhead(store, v.run_id, launch_overhead_ns)
    params = {
        "launch_overhead_ns": overhead.value_ns,
        "launch_overhead_source": overhead.source,
        "depth": depth,
    }
    rows = fetch(connect(store), "estimate_layer_time_roofline", params, tables={"layer_points": v.points})
    return TimeRoofline(
        v.run_id, v.run, "layer", depth, level, overhead, rows, rows, v.ceilings, v.provenance
    )
