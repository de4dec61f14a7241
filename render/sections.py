"""The report's run sections, from the report view's results (:class:`rooflake.views.report.RunReport`): the
charts each holds (the hierarchical roofline and the time-based roofline), its tables and its notes, in the shape
:func:`rooflake.render.report.write_report` lays out. Also the time-based roofline's chart of a view result, which
``rl roofline --time`` saves too."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from rooflake.render.captions import roofline_title, roofs_text, titled
from rooflake.schema import RooflakeError

__all__ = ["chart", "laying_out", "section", "time_chart"]


def time_chart(view: Any) -> dict[str, Any]:
    """The Vega-Lite spec (a dict, built without Altair) of a :class:`rooflake.views.time_roofline.TimeRoofline`'s
    chart: time vs complexity above the complexity plane."""
    from rooflake.render.time_roofline import time_roofline_spec

    title = roofline_title(view.run, view.run_id, view.grain, view.depth, prefix="Time-based roofline · ")
    return time_roofline_spec(
        view.points, view.ceilings, level=view.level, title=titled(title, getattr(view, "provenance", None))
    )


def chart(name: str, run_id: str, data: Any) -> dict[str, Any]:
    """The Vega-Lite spec (a dict) of a report's chart ``name`` of run ``run_id``, from what
    :func:`rooflake.views.report.report_runs` gives its ``drawn``: ``"hierarchical roofline"`` from ``(points,
    ceilings)`` (every level and precision), ``"time-based roofline"`` from a
    :class:`rooflake.views.time_roofline.TimeRoofline`. Raises :class:`rooflake.schema.RooflakeError` when it
    cannot be drawn (the section says why in a note)."""
    from rooflake.render.roofline import roofline_spec

    if name == "time-based roofline":
        return time_chart(data)
    return roofline_spec(data[0], data[1], level="all", precision="all", title=f"run {run_id}")


def section(r: Any, charts: dict[tuple[str, str], Any] | None = None) -> dict[str, Any]:
    """One run's report section for :func:`rooflake.render.report.write_report`, from a
    :class:`rooflake.views.report.RunReport`: its charts (roofline, time-based roofline), tables and notes. With
    ``--ceilings`` (``r.roofs`` not ``default``) a note names the roofs both charts are drawn against
    (:func:`rooflake.render.captions.roofs_text`), and their legends the source of each roof. ``charts``: specs
    built already (:func:`chart`), by ``(name, run_id)``; this run's are taken out of it."""
    from rooflake.render.tables import zero_flop_table

    def spec(name: str, data: Any) -> Any:  # taken out of charts: a long report holds each spec once
        built = (charts or {}).pop((name, r.run_id), None)
        return built if built is not None else chart(name, r.run_id, data)

    sec = _head(r.run, r.run_id)
    if r.roofs != "default" and r.roofline_note is None:
        against = f"--ceilings {r.roofs}{roofs_text(r.ceilings)}"  # the roofs both charts are drawn against
        sec["notes"].append(f"roofline and time-based roofline against {against}")
    try:
        if r.roofline_note is not None:  # the source has no ceiling of this run's machine
            raise RooflakeError(r.roofline_note)
        sec["charts"].append(("hierarchical roofline", spec("hierarchical roofline", (r.points, r.ceilings))))
    except RooflakeError as e:
        sec["notes"].append(f"no roofline: {e}")
    try:
        if r.time is not None:
            sec["charts"].append(("time-based roofline", spec("time-based roofline", r.time)))
    except RooflakeError as e:
        sec["notes"].append(f"no time-based roofline: {e}")
    if r.time_note:
        sec["notes"].append(r.time_note)
    zero = zero_flop_table(r.points) if r.points.num_rows else None
    if zero is not None and zero.height:
        share = zero["total_share_of_time"][0] if "total_share_of_time" in zero.columns else None
        sec["tables"].append((f"kernels without FLOPs ({(share or 0):.1%} of the time)", zero))
    sec["tables"] += [
        ("top layers by GPU time (depth 1)", r.top_layers),
        ("top kernels by GPU time", r.top_kernels),
        (f"physics warnings ({r.checks.num_rows})", r.checks),
    ]
    _comparison(r, sec)
    return sec


def _head(run: dict[str, Any], run_id: str) -> dict[str, Any]:
    """A section's title and facts of run ``run_id`` (its ``runs`` row), with no chart, table or note yet."""
    return {
        "title": f"{Path(run['source_path']).name} — run {run_id}",
        "meta": {
            "GPU": run.get("gpu_name") or "unknown",
            "format": run["source_format"],
            "producer": run.get("producer"),
            "kernels": run.get("n_kernels"),
            "labels": ", ".join(f"{k}={v}" for k, v in (run.get("labels") or [])) or "none",
            "ingested": str(run["ingested_at"])[:19],
        },
        "charts": [],
        "tables": [],
        "notes": [],
    }


def laying_out(charts: dict[tuple[str, str], Any]) -> Callable[[str, str, Any], None]:
    """The ``drawn`` of :func:`rooflake.views.report.report_runs`: each chart built as soon as its rows are read,
    kept in ``charts`` by ``(name, run_id)`` for its section, and laid out at once
    (:func:`rooflake.render.report.lay_out`) while the report's other tables are read."""
    from rooflake.render.report import lay_out

    def drawn(name: str, run_id: str, data: Any) -> None:
        try:
            charts[(name, run_id)] = spec = chart(name, run_id, data)
        except RooflakeError:  # section() builds it again and says why in a note
            return
        lay_out(spec)

    return drawn


def _comparison(r: Any, sec: dict[str, Any]) -> None:
    """The comparison with the previous run of the same labels, or a note saying why it was skipped."""
    if r.comparison_note:
        sec["notes"].append(r.comparison_note)
    cmp = r.comparison
    if cmp is None:
        return
    change = "n/a" if cmp.time_change is None else f"{cmp.time_change:+.1%}"
    on = "" if cmp.ceilings == "default" else f", bounds against --ceilings {cmp.ceilings}"
    sec["notes"].append(
        f"compared with the previous run of the same labels {cmp.base_run}: total GPU time {change}{on}"
    )
    sec["tables"].append((f"layers vs run {cmp.base_run}", cmp.layers))
