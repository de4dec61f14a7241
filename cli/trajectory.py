"""``rl trajectory``: the roofline trajectories of layers or kernels across runs that vary one label; draw, save."""

from __future__ import annotations

from pathlib import Path
from typing import Any

BY = ("layer", "kernel")
_ORDER = "ORDER BY series, entity_kind, entity, level, step, run_id"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def trajectory_rows(
    store: Any,
    vary: str,
    where: dict[str, str] | None = None,
    layer: str | None = None,
    level: str = "dram",
    by: str = "layer",
    depth: int = 1,
) -> dict[str, Any]:
    """Rows of the ``trajectory`` query for one sweep, filtered, or a :class:`RooflineDataError` that says why
    there is no trajectory.

    ``where``: other labels the runs must carry (``{"model": "resnet50"}``); ``layer``: a regex the layer (``by
    layer``) or the kernel's NVTX path (``by kernel``) must match (DuckDB ``regexp_matches``, a partial match);
    ``level``: l1 | l2 | dram | all; ``by``: layer | kernel; ``depth``: NVTX depth of a layer.

    Series (runs agreeing on every label but ``vary``) with fewer than two distinct values of ``vary`` are left
    out. Returns ``{"rows": pa.Table (trajectory rows, ordered), "ceilings": pa.Table (run_ceilings of the runs
    in the rows), "series": [str] kept, "single": [str] series left out (one value only), "runs": int}``.
    Raises :class:`RooflineDataError` (no run carries the label, fewer than two values, nothing to draw),
    :class:`QueryError` (a bad regex), ``ValueError`` (``where`` names ``vary``; unknown ``by`` or ``level``).
    """
    import duckdb

    from rooflake import queries
    from rooflake.schema import QueryError, RooflineDataError
    from rooflake.schema.catalog import COLLECT_HINT
    from rooflake.schema.duck import fetch_arrow

    where = dict(where or {})
    if by not in BY:
        raise ValueError(f"unknown --by {by!r} (choose one of: {', '.join(BY)})")
    if level not in ("dram", "l2", "l1", "all"):
        raise ValueError(f"unknown level {level!r} (choose one of: dram, l2, l1, all)")
    if vary in where:
        raise ValueError(
            f"--where {vary}={where[vary]}: {vary!r} is the varied label (--vary), it cannot be fixed"
        )
    con = queries.connect(store)
    params: dict[str, Any] = {"vary": vary, "depth": depth}
    label_cond = ""
    for i, (k, v) in enumerate(sorted(where.items())):
        label_cond += f" AND labels[$wk{i}] IS NOT DISTINCT FROM $wv{i}"
        params[f"wk{i}"], params[f"wv{i}"] = k, v
    where_text = "".join(f" with {k}={v}" for k, v in sorted(where.items()))

    # 1. the runs: which carry the label, and which series have two values or more
    rp = {k: v for k, v in params.items() if k != "depth"}
    runs = con.execute(
        f"SELECT run_id, labels[$vary] AS value, array_to_string(list_sort(list_transform("
        f"list_filter(map_entries(labels), lambda e: e.key <> $vary), lambda e: e.key || '=' || e.value)), ', ') "
        f"AS series FROM runs WHERE labels[$vary] IS NOT NULL{label_cond}",
        rp,
    ).fetchall()
    if not runs:
        keys = [
            r[0]
            for r in con.execute(
                "SELECT DISTINCT unnest(map_keys(labels)) AS k FROM runs ORDER BY k"
            ).fetchall()
        ]
        raise RooflineDataError(
            f"no run{where_text} carries the label {vary!r} "
            f"(labels in the store: {', '.join(keys) or 'none'}; label runs with `rl ingest -l {vary}=VALUE`)"
        )
    values: dict[str, set[str]] = {}
    for _, value, series in runs:
        values.setdefault(series, set()).add(value)
    kept = sorted(s for s, v in values.items() if len(v) >= 2)
    single = sorted(s for s, v in values.items() if len(v) < 2)
    if not kept:
        shown = "; ".join(f"{s or '(no other label)'}: {vary}={', '.join(sorted(values[s]))}" for s in single)
        raise RooflineDataError(
            f"label {vary!r} takes fewer than 2 values among runs sharing their other labels{where_text} "
            f"({shown}): a trajectory needs at least two runs that differ only in {vary}"
        )

    # 2. the points
    params["series"] = kept
    cond = f"entity_kind = '{by}' AND list_contains($series, series){label_cond}"
    if level != "all":
        cond += " AND level = $level"
        params["level"] = level
    if layer:
        cond += " AND regexp_matches(coalesce(nvtx_path, '(no NVTX range)'), $layer)"
        params["layer"] = layer
    try:
        rows = fetch_arrow(con, f"SELECT * FROM ({queries.load('trajectory')}) WHERE {cond} {_ORDER}", params)
    except duckdb.Error as e:
        raise QueryError(f"trajectory of {vary}: {' '.join(str(e).split())}") from e
    what = f"layer at depth {depth}" if by == "layer" else "kernel"
    match = f" matching {layer!r}" if layer else ""
    level_text = "any level" if level == "all" else level.upper()
    drawable = [
        r
        for r in rows.select(["ai", "flops_per_s"]).to_pylist()
        if (r["ai"] or 0) > 0 and (r["flops_per_s"] or 0) > 0  # NaN > 0 is False
    ]
    if not drawable:
        n_runs = len({r[0] for r in runs if r[2] in kept})
        raise RooflineDataError(
            f"no {what}{match} has FLOPs, bytes at {level_text} and a duration in the {n_runs} runs "
            f"varying {vary}{where_text}: nothing to draw. To collect the counters, {COLLECT_HINT}."
        )
    run_ids = sorted(set(rows.column("run_id").to_pylist()))
    ceilings = fetch_arrow(con, "SELECT * FROM run_ceilings WHERE list_contains($r, run_id)", {"r": run_ids})
    return {"rows": rows, "ceilings": ceilings, "series": kept, "single": single, "runs": len(run_ids)}


def draw_trajectory(
    store_dir: Path | str | None,
    vary: str,
    out: Path,
    where: dict[str, str] | None,
    layer: str | None,
    level: str = "dram",
    by: str = "layer",
    depth: int = 1,
) -> str:
    """Draw the roofline trajectories of the layers (``by='layer'``, NVTX depth ``depth``) or kernels
    (``by='kernel'``: identity = NVTX path, name, occurrence) as label ``vary`` changes across runs sharing their
    other labels (restricted to ``where``; layers/kernel paths matching the regex ``layer``), at memory ``level``
    (l1 | l2 | dram | all), into ``out`` (.html, .png or .svg). Returns the one-line summary the CLI prints.

    Raises :class:`RooflineDataError` (fewer than two runs vary the label, no entity has points),
    :class:`QueryError` (bad regex), ``ValueError`` (bad suffix, ``by``, ``level``, ``where`` naming ``vary``).
    """
    from rooflake.render.save import SAVE_SUFFIXES, save_chart
    from rooflake.render.trajectory import trajectory_chart
    from rooflake.store import Store

    out = Path(out)
    if out.suffix.lower() not in SAVE_SUFFIXES:
        raise ValueError(f"cannot save a chart to {str(out)!r}: use a .html, .png or .svg file")
    data = trajectory_rows(Store(store_dir), vary, where, layer, level, by, depth)
    rows = data["rows"]
    where_text = ", ".join(f"{k}={v}" for k, v in sorted((where or {}).items()))
    what = f"NVTX layers at depth {depth}" if by == "layer" else "kernels"
    title = f"Roofline trajectories as {vary} varies · {what}" + (f" · {where_text}" if where_text else "")
    chart = trajectory_chart(rows, data["ceilings"], level=level, title=title)
    save_chart(chart, out)
    series = set(rows.column("series").to_pylist())
    entities = set(zip(rows.column("series").to_pylist(), rows.column("entity").to_pylist(), strict=True))
    summary = (
        f"wrote {out} (trajectory of {vary}: {len(series)} series, {_plural(len(entities), by)}, "
        f"{_plural(data['runs'], 'run')}, level {level}"
    )
    if data["single"]:
        summary += f"; left out {len(data['single'])} series with a single {vary} value"
    return summary + ")"
