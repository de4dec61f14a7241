"""``rl report`` (the static HTML report of a set of runs, safe to run from cron) and ``rl check`` (physics
checks)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from rooflake.cli.ceilings_cmds import CeilingSource, ceiling_choice
from rooflake.cli.common import (
    Fmt,
    FmtOpt,
    OutOpt,
    StoreOpt,
    WhereOpt,
    app,
    emit,
    guard,
    need_out,
    on_terminal,
    parse_labels,
    reading_store,
)

#: ``rl report --ceilings``: rl roofline's choices (:class:`CeilingSource`) and meaning, for both charts of each run;
#: without it each chart keeps the roofs the report always drew.
ReportCeilingsOpt = Annotated[
    CeilingSource | None,
    typer.Option(
        "--ceilings",
        help="Roofs of each run's roofline and time-based roofline, as rl roofline --ceilings takes them: the "
        "report's peaks (profiled clock), the datasheet (boost clock), ERT, measured ceilings, or all (the others "
        "dashed); a run without them gets a note. Default: the roofline on the report's own peaks, the time-based "
        "one on the report's, else measured, else datasheet.",
    ),
]


def chart(name: str, run_id: str, data: Any) -> dict[str, Any]:
    """The Vega-Lite spec (a dict) of a report's chart ``name`` of run ``run_id``, from what
    :func:`rooflake.views.report.report_runs` gives its ``drawn``: ``"hierarchical roofline"`` from ``(points,
    ceilings)`` (every level and precision), ``"time-based roofline"`` from a
    :class:`rooflake.views.time_roofline.TimeRoofline`. Raises :class:`rooflake.schema.RooflakeError` when it
    cannot be drawn (the section says why in a note)."""
    from rooflake.cli.roofline_cmds import time_chart
    from rooflake.render import roofline_spec

    if name == "time-based roofline":
        return time_chart(data)
    return roofline_spec(data[0], data[1], level="all", precision="all", title=f"run {run_id}")


def section(r: Any, charts: dict[tuple[str, str], Any] | None = None) -> dict[str, Any]:
    """One run's report section for :func:`rooflake.render.report.write_report`, from a
    :class:`rooflake.views.report.RunReport`: its charts (roofline, time-based roofline), tables and notes. With
    ``--ceilings`` (``r.roofs`` not ``default``) a note names the roofs both charts are drawn against
    (:func:`rooflake.cli.ceilings_cmds.roofs_text`), and their legends the source of each roof. ``charts``: specs
    built already (:func:`chart`), by ``(name, run_id)``; this run's are taken out of it."""
    from rooflake.cli.ceilings_cmds import roofs_text
    from rooflake.render import zero_flop_table
    from rooflake.schema import RooflakeError

    def spec(name: str, data: Any) -> Any:  # taken out of charts: a long report holds each spec once
        built = (charts or {}).pop((name, r.run_id), None)
        return built if built is not None else chart(name, r.run_id, data)

    run = r.run
    sec: dict[str, Any] = {
        "title": f"{Path(run['source_path']).name} — run {r.run_id}",
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


def _laying_out(charts: dict[tuple[str, str], Any]) -> Any:
    """The ``drawn`` of :func:`rooflake.views.report.report_runs`: each chart built as soon as its rows are read,
    kept in ``charts`` by ``(name, run_id)`` for its section, and laid out at once
    (:func:`rooflake.render.report.lay_out`) while the report's other tables are read."""
    from rooflake.render.report import lay_out
    from rooflake.schema import RooflakeError

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


@app.command()
@guard
def report(
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            "-o",
            help="Output directory (replaced atomically; missing parent directories are created).",
        ),
    ],
    since: Annotated[
        str | None,
        typer.Option("--since", help="Runs ingested within this long: 30m, 24h, 7d (default: all)."),
    ] = None,
    runs: Annotated[
        list[str] | None, typer.Option("--runs", help="These runs (repeatable; overrides --since).")
    ] = None,
    where: WhereOpt = None,
    ceilings: ReportCeilingsOpt = None,
    store: StoreOpt = None,
) -> None:
    """Write a static HTML report (opens offline) with PNG/SVG of each chart: per run the roofline, top layers and
    kernels, zero-FLOP share, physics warnings and the comparison with the previous run of the same labels."""
    from rooflake.render import engine

    # a process per core, started before the imports _write makes: renderers warming up meanwhile, PNG processes
    engine.start()
    try:
        typer.echo(_write(out, since, runs, parse_labels(where, "--where"), ceiling_choice(ceilings), store))
    except BaseException:
        engine.stop()  # the charts still queued are cancelled, not drawn before rl exits
        raise


def _write(
    out: Path, since: str | None, runs: list[str] | None, labels: Any, ceilings: str, store: str | None
) -> str:
    """:func:`report`'s work, the renderers started: the report written into ``out``; the line saying so."""
    from rooflake.render.report import write_report
    from rooflake.views.report import report_runs

    charts: dict[tuple[str, str], Any] = {}
    ids, reports = report_runs(
        reading_store(store),
        since=since,
        run_ids=runs,
        where=labels,
        ceilings=ceilings,
        drawn=_laying_out(charts),
    )
    n = len(ids)
    # each run's charts render on the other cores while the next run is read
    res = write_report((section(r, charts) for r in reports), out, title=f"rooflake report — {n} run(s)")
    return f"wrote {res['index']} ({n} runs, {res['charts']} charts as HTML, PNG and SVG)"


@app.command()
@guard
def check(
    run_id: Annotated[
        str | None, typer.Argument(help="Run id or unique prefix (default: every run).")
    ] = None,
    fmt: FmtOpt = Fmt.table,
    out: OutOpt = None,
    store: StoreOpt = None,
) -> None:
    """Physics checks: points above their roof, AI order violated, GEMMs without FLOPs, NaN durations, zero or
    missing peaks, instrumented durations, NVTX coverage under 90 %."""
    from rooflake.views.checks import checks

    need_out(fmt, out)
    table = checks(reading_store(store), run_id).table
    emit(table, fmt, out)
    if on_terminal(fmt, out):
        typer.echo(f"{table.num_rows} finding(s)")
