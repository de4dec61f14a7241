"""``rl report``: gather the runs' tables, draw their charts, write the static report (safe to run from cron)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def build(
    store_dir: Path | None,
    out: Path,
    *,
    since: str | None = None,
    run_ids: list[str] | None = None,
    where: dict[str, str] | None = None,
) -> str:
    """Write the report of the selected runs into directory ``out``; returns the one-line summary."""
    from rooflake.queries import report as rq
    from rooflake.render import roofline_chart, zero_flop_table
    from rooflake.render.report import write_report
    from rooflake.schema import RooflakeError
    from rooflake.store import Store

    full = Store(store_dir)
    ids = rq.select_runs(full, since=rq.parse_since(since) if since else None, run_ids=run_ids, where=where)
    store = Store(
        store_dir, only_runs=rq.with_previous(full, ids)
    )  # views over just the runs the report reads
    sections: list[dict[str, Any]] = []
    for rid in ids:
        t = rq.run_tables(store, rid)
        run = t["run"]
        labels = ", ".join(f"{k}={v}" for k, v in (run.get("labels") or []))
        sec: dict[str, Any] = {
            "title": f"{Path(run['source_path']).name} — run {rid}",
            "meta": {
                "GPU": run.get("gpu_name") or "unknown",
                "format": run["source_format"],
                "producer": run.get("producer"),
                "kernels": run.get("n_kernels"),
                "labels": labels or "none",
                "ingested": str(run["ingested_at"])[:19],
            },
            "charts": [],
            "tables": [],
            "notes": [],
        }
        try:
            chart = roofline_chart(
                t["points"], t["ceilings"], level="all", precision="all", title=f"run {rid}"
            )
            sec["charts"].append(("hierarchical roofline", chart))
        except RooflakeError as e:
            sec["notes"].append(f"no roofline: {e}")
        sec["charts"] += _time_view(store, rid, sec["notes"]).get("extra_charts", [])
        zero = zero_flop_table(t["points"]) if t["points"].num_rows else None
        if zero is not None and zero.height:
            share = zero["total_share_of_time"][0] if "total_share_of_time" in zero.columns else None
            sec["tables"].append((f"kernels without FLOPs ({(share or 0):.1%} of the time)", zero))
        sec["tables"].append(("top layers by GPU time (depth 1)", t["top_layers"]))
        sec["tables"].append(("top kernels by GPU time", t["top_kernels"]))
        sec["tables"].append((f"physics warnings ({t['checks'].num_rows})", t["checks"]))
        cmp = t["comparison"]
        if cmp is not None:
            change = cmp["time_change"]
            sec["notes"].append(
                f"compared with the previous run of the same labels {cmp['base_run']}: total GPU time "
                + (f"{change:+.1%}" if change is not None else "n/a")
            )
            sec["tables"].append((f"layers vs run {cmp['base_run']}", cmp["layers"]))
        sections.append(sec)
    res = write_report(sections, out, title=f"rooflake report — {len(ids)} run(s)")
    return f"wrote {res['index']} ({len(ids)} runs, {res['charts']} charts as HTML, PNG and SVG)"


def _time_view(store: Any, run_id: str, notes: list[str]) -> dict[str, Any]:
    """The time-based roofline chart of a run (Wang et al.), or a note saying why there is none."""
    from rooflake.cli.time_roofline import draw_time
    from rooflake.schema import RooflakeError

    try:
        chart = draw_time(store, run_id, None)
    except (RooflakeError, ValueError) as e:
        notes.append(f"no time-based roofline: {e}")
        return {}
    return {"extra_charts": [("time-based roofline", chart)]}
