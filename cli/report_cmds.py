"""``rl report`` (the static HTML report of a set of runs, safe to run from cron) and ``rl check`` (physics
checks)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rooflake.cli.common import (
    CeilingSource,
    Fmt,
    FmtOpt,
    OutOpt,
    StoreOpt,
    WhereOpt,
    app,
    ceiling_choice,
    emit,
    guard,
    need_out,
    on_terminal,
    parse_labels,
    reading_store,
)
from rooflake.render.sections import section

__all__ = ["check", "report", "section"]  # section: the report's run sections, rooflake.render.sections's

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
    from rooflake.reporting import report_html

    labels = parse_labels(where, "--where")
    res = report_html(
        reading_store(store), out, since=since, run_ids=runs, where=labels, ceilings=ceiling_choice(ceilings)
    )
    typer.echo(f"wrote {res.index} ({len(res.run_ids)} runs, {res.charts} charts as HTML, PNG and SVG)")


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
