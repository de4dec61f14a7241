"""``rl roofline --time``: the time-based roofline of one run (Wang et al., arXiv 2009.04598): choose the launch
overhead t_o, run the ``time_roofline`` query, draw both views, save."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

#: t_o when neither an option nor an nsys trace gives one: 1 us. Below the GPU durations of the shortest kernels in
#: the fixture reports (ncu 3.2 us, nsys 0.9 us) and within the back-to-back gaps their nsys traces give
#: (launch_overhead: 0.64 to 2.0 us), so it never puts T_min above a real kernel's T. A placeholder, not a
#: measurement: pass --launch-overhead, or ingest an nsys trace of the same GPU.
DEFAULT_LAUNCH_OVERHEAD_NS = 1000.0
#: Fewest back-to-back pairs for a derived t_o to be used (a median of one or two gaps is noise).
MIN_PAIRS = 5


def launch_overhead(store: Any, run_id: str, option_ns: float | None = None) -> tuple[float, str]:
    """The launch overhead t_o (ns) for ``run_id`` and where it came from, first of:

    1. ``option_ns`` (source ``'option'``; must be a finite number > 0, else ``ValueError``);
    2. the ``launch_overhead`` view of this run itself (an nsys run with at least :data:`MIN_PAIRS` back-to-back
       pairs of tiny kernels): ``'derived from nsys run <id>'``;
    3. the nsys run of the same GPU (``runs.gpu_name``) with the most such pairs:
       ``'derived from nsys run <id> (same GPU: <name>)'``;
    4. :data:`DEFAULT_LAUNCH_OVERHEAD_NS`: ``'default'``.
    """
    from rooflake import queries

    if option_ns is not None:
        if not (math.isfinite(option_ns) and option_ns > 0):
            raise ValueError(f"launch overhead must be a number of nanoseconds > 0, got {option_ns}")
        return float(option_ns), "option"
    con = queries.connect(store)
    # every run's derived t_o, once per store state (the view scans every nsys kernel of the store)
    key = getattr(store, "_db", (None,))[0]
    cached = getattr(store, "_launch_overheads", None)
    if cached is None or cached[0] != key:
        table = con.execute(
            """
            SELECT o.run_id, o.launch_overhead_ns, r.gpu_name, o.n_pairs, epoch(r.ingested_at)
            FROM launch_overhead AS o JOIN runs AS r USING (run_id)
            WHERE o.n_pairs >= $min_pairs AND o.launch_overhead_ns > 0
            """,
            {"min_pairs": MIN_PAIRS},
        ).fetchall()
        store._launch_overheads = cached = (key, table)
    gpu_of = con.execute("SELECT gpu_name FROM runs WHERE run_id = $run_id", {"run_id": run_id}).fetchall()
    my_gpu = gpu_of[0][0] if gpu_of else None
    candidates = [r for r in cached[1] if r[0] == run_id or (my_gpu is not None and r[2] == my_gpu)]
    candidates.sort(key=lambda r: (r[0] != run_id, -r[3], -(r[4] or 0), r[0]))
    rows = [(r[0], r[1], r[2]) for r in candidates[:1]]
    if rows:
        other, value, gpu = rows[0]
        where = "" if other == run_id else f" (same GPU: {gpu})"
        return float(value), f"derived from nsys run {other}{where}"
    return DEFAULT_LAUNCH_OVERHEAD_NS, "default"


def time_rows(store: Any, run_id: str, launch_overhead_ns: float, source: str) -> Any:
    """Rows of the ``time_roofline`` query for ``run_id`` with t_o = ``launch_overhead_ns`` (a pyarrow.Table; columns
    in queries/time_roofline.sql). Raises :class:`QueryError` when the SQL fails."""
    import duckdb

    from rooflake import queries
    from rooflake.schema import QueryError
    from rooflake.schema.duck import fetch_arrow

    con = queries.connect(store)
    params = {"run_id": run_id, "launch_overhead_ns": launch_overhead_ns, "launch_overhead_source": source}
    try:
        return fetch_arrow(con, queries.load("time_roofline"), params)
    except duckdb.Error as e:
        raise QueryError(f"time_roofline of run {run_id}: {' '.join(str(e).split())}") from e


def draw_time(
    store_dir: Any,
    run_id: str | None,
    out: Path | None,
    by: str = "kernel",
    depth: int = 1,
    launch_overhead_ns: float | None = None,
    level: str = "dram",
) -> str:
    """Draw the time-based roofline of ``run_id`` (None = the latest run) into ``out`` (.html, .png, .svg): time vs
    FLOPs and vs bytes at ``level`` with the bound lines and the t_o floor, above the complexity plane; one point
    per kernel, or per NVTX layer at ``depth`` with ``by='layer'``. t_o: see :func:`launch_overhead`.
    With ``out=None`` nothing is written and the chart itself is returned (for the report).

    Returns the one-line summary the CLI prints (it names t_o and its source). Raises :class:`RunNotFoundError`,
    :class:`RooflineDataError` (no kernel has FLOPs, bytes and a duration: the message says how to collect them),
    ``ValueError`` (bad ``by``, ``level``, t_o or output suffix).
    """
    import polars as pl

    from rooflake import queries
    from rooflake.render.formats import duration as _duration
    from rooflake.render.save import save_chart
    from rooflake.render.time_roofline import time_roofline_chart
    from rooflake.schema import RooflineDataError
    from rooflake.schema.catalog import COLLECT_HINT
    from rooflake.schema.duck import fetch_arrow
    from rooflake.store import Store

    if by not in ("kernel", "layer"):
        raise ValueError(f"unknown --by {by!r} (choose kernel or layer)")
    store = store_dir if isinstance(store_dir, Store) else Store(store_dir)
    con = queries.connect(store)
    run_id = store.resolve(run_id)
    run = fetch_arrow(con, "SELECT * FROM runs WHERE run_id = $r", {"r": run_id}).to_pylist()[0]
    t_o, source = launch_overhead(store, run_id, launch_overhead_ns)
    rows = pl.from_arrow(time_rows(store, run_id, t_o, source))
    assert isinstance(rows, pl.DataFrame)
    kernels = rows.filter(pl.col("level") == "kernel")
    usable = kernels.filter(
        (pl.col("flops").fill_nan(None) >= 0)
        & pl.any_horizontal(pl.col(f"bytes_{lv}").fill_nan(None) > 0 for lv in ("l1", "l2", "dram"))
        & (pl.col("duration_ns").fill_nan(None) > 0)
        & pl.col("t_min_ns").is_not_null()
    )
    if usable.height == 0:
        raise RooflineDataError(
            f"run {run_id} ({run['source_path']}): no kernel has FLOPs, bytes and a duration with a roof "
            f"({kernels.height} kernel(s)), so there is no time-based roofline to draw. To collect them, "
            f"{COLLECT_HINT}; for an nsys run, draw `rl roofline --by layer --with NCU_RUN` instead."
        )
    if by == "layer":
        points = rows.filter((pl.col("level") == "layer") & (pl.col("depth") == depth))
        if points.filter(pl.col("t_min_ns").is_not_null()).height == 0:
            deepest = max((int(d) for d in rows.get_column("depth").drop_nulls().to_list()), default=0)
            raise RooflineDataError(
                f"run {run_id}: no NVTX layer at depth {depth} has a kernel with counters "
                f"(the deepest layers are at depth {deepest})"
            )
    else:
        points = kernels
    ceilings = fetch_arrow(con, "SELECT * FROM run_ceilings WHERE run_id = $r", {"r": run_id})
    title = (
        f"Time-based roofline · {run['gpu_name'] or 'GPU'} · {Path(run['source_path']).name} · run {run_id}"
    )
    if by == "layer":
        title += f" · NVTX layers at depth {depth}"
    chart = time_roofline_chart(points, ceilings, level=level, title=title)
    if out is None:  # the report embeds the chart itself
        return chart  # type: ignore[return-value]
    save_chart(chart, out)
    drawn = points.filter(pl.col("t_min_ns").is_not_null())
    bounds = drawn.get_column("bound").value_counts(sort=True).iter_rows()
    what = f"layers at depth {depth}" if by == "layer" else "kernels"
    return (
        f"wrote {out} (run {run_id}, {drawn.height} {what}, t_o = {_duration(t_o)} ({source}), "
        f"bounds: {', '.join(f'{b} {n}' for b, n in bounds)})"
    )
