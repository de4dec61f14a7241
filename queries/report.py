"""Data of the scheduled report: which runs, and per run the tables its sections show (no charts here)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from rooflake.queries import compare, connect
from rooflake.schema import QueryError, RooflakeError, RunNotFoundError
from rooflake.schema.duck import fetch_arrow


def parse_since(text: str) -> timedelta:
    """``30m``, ``24h``, ``7d`` -> a timedelta. Raises :class:`QueryError` on anything else."""
    units = {"m": "minutes", "h": "hours", "d": "days"}
    num, unit = text[:-1], text[-1:]
    if unit not in units or not num.replace(".", "", 1).isdigit():
        raise QueryError(f"--since {text!r}: use a number and m, h or d (e.g. 24h)")
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
    con = connect(store)
    if run_ids:
        ids = [store.resolve(r) for r in run_ids]
    else:
        cutoff = datetime.now(timezone.utc) - since if since else datetime(1970, 1, 1, tzinfo=timezone.utc)
        ids = [
            r[0]
            for r in con.execute(
                "SELECT run_id FROM runs WHERE ingested_at >= ? ORDER BY ingested_at, run_id", [cutoff]
            ).fetchall()
        ]
    if where:
        keep = []
        for rid in ids:
            labels = dict(
                con.execute(
                    "SELECT unnest(map_entries(labels), recursive := true) FROM runs WHERE run_id = ?", [rid]
                ).fetchall()
            )
            if all(labels.get(k) == v for k, v in where.items()):
                keep.append(rid)
        ids = keep
    if not ids:
        raise RunNotFoundError(f"no run in store {store.root} matches the report's selection")
    return ids


def with_previous(store: Any, ids: list[str]) -> list[str]:
    """``ids`` and, for each, the latest earlier run with the same (non-empty) labels: what a report reads."""
    con = connect(store)
    prev = con.execute(
        """
        SELECT (SELECT r.run_id FROM runs AS r
                WHERE r.run_id <> me.run_id AND cardinality(me.labels) > 0 AND r.labels = me.labels
                  AND r.ingested_at < me.ingested_at
                ORDER BY r.ingested_at DESC LIMIT 1)
        FROM runs AS me WHERE me.run_id IN (SELECT unnest($ids))
        """,
        {"ids": ids},
    ).fetchall()
    return sorted(set(ids) | {p[0] for p in prev if p[0]})


def run_tables(store: Any, run_id: str, top: int = 10) -> dict[str, Any]:
    """Tables of one run's report section.

    Returns ``{"run": dict (runs row), "points", "ceilings" (kernel_roofline / run_ceilings rows), "top_layers"
    (layer, launches, gpu_time_ns, share_of_gpu_time, flops_per_s at depth 1), "top_kernels" (name, launches,
    gpu_time_ns, share), "checks" (physics_checks rows), "previous": run id | None (the latest earlier run with the
    same labels), "comparison": dict | None (:func:`rooflake.queries.compare`)}``.
    """
    con = connect(store)
    p = {"run_id": run_id}
    run = fetch_arrow(con, "SELECT * FROM runs WHERE run_id = $run_id", p).to_pylist()[0]
    out: dict[str, Any] = {"run": run}
    out["points"] = fetch_arrow(con, "SELECT * FROM kernel_roofline WHERE run_id = $run_id", p)
    out["ceilings"] = fetch_arrow(con, "SELECT * FROM run_ceilings WHERE run_id = $run_id", p)
    out["top_layers"] = fetch_arrow(
        con,
        "SELECT layer, launches, gpu_time_ns, share_of_gpu_time, flops_per_s FROM layer_summary "
        "WHERE run_id = $run_id AND depth = 1 ORDER BY gpu_time_ns DESC LIMIT $top",
        {**p, "top": top},
    )
    out["top_kernels"] = fetch_arrow(
        con,
        """
        SELECT name, count(*) AS launches, sum(duration_ns) FILTER (WHERE NOT isnan(duration_ns)) AS gpu_time_ns,
               sum(duration_ns) FILTER (WHERE NOT isnan(duration_ns))
                   / sum(sum(duration_ns) FILTER (WHERE NOT isnan(duration_ns))) OVER () AS share
        FROM kernels WHERE run_id = $run_id GROUP BY name ORDER BY gpu_time_ns DESC NULLS LAST LIMIT $top
        """,
        {**p, "top": top},
    )
    out["checks"] = fetch_arrow(
        con, 'SELECT kernel_id, name, "check", detail FROM physics_checks WHERE run_id = $run_id', p
    )
    prev = con.execute(
        """
        SELECT r.run_id FROM runs AS r, (SELECT labels, ingested_at FROM runs WHERE run_id = $run_id) AS me
        WHERE r.run_id <> $run_id AND cardinality(me.labels) > 0 AND r.labels = me.labels
            AND r.ingested_at < me.ingested_at
        ORDER BY r.ingested_at DESC LIMIT 1
        """,
        p,
    ).fetchall()
    out["previous"] = prev[0][0] if prev else None
    out["comparison"] = None
    if out["previous"]:
        try:
            out["comparison"] = compare(store, out["previous"], run_id)
        except RooflakeError:
            out["comparison"] = None
    return out
