"""The static HTML report of a set of runs, as ``rl report`` writes it: the report view reads each run's tables
(:func:`rooflake.views.report.report_runs`), :mod:`rooflake.render.sections` turns them into sections and
:func:`rooflake.render.report.write_report` lays them out and writes the page and its charts."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["ReportWritten", "report_html"]


@dataclass(frozen=True)
class ReportWritten:
    """What :func:`report_html` wrote: ``index`` (the page, ``OUT/index.html``), ``run_ids`` (the runs it shows,
    oldest first) and ``charts`` (how many charts, each as HTML, PNG and SVG under ``OUT/charts/``)."""

    index: Path
    run_ids: list[str]
    charts: int


def report_html(
    store: Any,
    out: str | Path,
    *,
    since: str | None = None,
    run_ids: list[str] | None = None,
    where: dict[str, str] | None = None,
    ceilings: str = "default",
) -> ReportWritten:
    """Write the report of the runs of ``store`` (a :class:`rooflake.store.Store`, or its location) into folder
    ``out``, replaced atomically (missing parents created): ``index.html`` (opens offline) and a PNG and an SVG of
    each chart. Per run: its hierarchical roofline and time-based roofline, top layers and kernels, the share of
    time without FLOPs, the physics warnings and the comparison with the previous run of the same labels.

    The runs: ``run_ids`` (ids or unique prefixes), else those ingested within ``since`` (``30m``, ``24h``,
    ``7d``), else all; with ``where`` only those carrying these labels. ``ceilings``: the roofs both charts are
    drawn against (:data:`rooflake.views.ceilings.CHOICES`, as ``rl roofline --ceilings``).

    The charts render in renderer processes, one per core (:mod:`rooflake.render.engine`: they are spawned, so a
    script calling this needs the ``if __name__ == "__main__":`` guard). Raises :class:`rooflake.schema.UsageError`
    (bad ``since`` or ``ceilings``), :class:`rooflake.schema.RunNotFoundError` (no run selected),
    :class:`rooflake.schema.OutputError` (``out`` cannot be written)."""
    from rooflake.render import engine

    # a process per core, started before the imports the report makes: renderers warm up meanwhile
    engine.start()
    try:
        return _write(store, Path(out), since, run_ids, where, ceilings)
    except BaseException:
        engine.stop()  # the charts still queued are cancelled, not drawn before the caller goes on
        raise


def _write(
    store: Any,
    out: Path,
    since: str | None,
    run_ids: list[str] | None,
    where: dict[str, str] | None,
    ceilings: str,
) -> ReportWritten:
    """:func:`report_html`'s work, the renderers started."""
    from rooflake.render.report import write_report
    from rooflake.render.sections import laying_out, section
    from rooflake.store import Store
    from rooflake.views.report import report_runs

    charts: dict[tuple[str, str], Any] = {}
    ids, reports = report_runs(
        store if isinstance(store, Store) else Store(store),
        since=since,
        run_ids=run_ids,
        where=where,
        ceilings=ceilings,
        drawn=laying_out(charts),
    )
    # each run's charts render on the other cores while the next run is read
    res = write_report(
        (section(r, charts) for r in reports), out, title=f"rooflake report — {len(ids)} run(s)"
    )
    return ReportWritten(Path(res["index"]), list(ids), int(res["charts"]))
