"""The scheduled report's data: which runs, and per run the tables and views its section shows (no charts here)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from rooflake.queries import connect, fetch
from rooflake.schema import BadArgument, RooflakeError, RooflineDataError, RunNotFoundError, UsageError
from rooflake.views.ceilings import CHOICES, RunRoofs, run_roofs
from rooflake.views.compare import Comparison, compare
from rooflake.views.roofline import missing_counters, no_counters
from rooflake.views.runs import row_dicts, rows_where
from rooflake.views.time_roofline import (
    LaunchOverhead,
    TimeRoofline,
    chosen_kernel_roofs,
    launch_overheads,
    time_rooflines,
)

TOP = 10


@dataclass(frozen=True)
class RunReport:
    """One run's section of the report.

    - ``run_id``; ``run``: its ``runs`` row (dict).
    - ``points``, ``ceilings``: its kernel_roofline and run_ceilings rows (see :mod:`rooflake.views.roofline`);
      with ``roofs`` other than ``default``, kernel_roofline against that source's roofs and their rows as
      :func:`rooflake.views.ceilings.run_roofs` gives them (run_ceilings' columns plus source_label and overlay),
      as :func:`rooflake.views.roofline.roofline` gives both for ``rl roofline --ceilings``.
    - ``top_layers``: layer, launches, gpu_time_ns (ns), share_of_gpu_time, flops_per_s (FLOP/s) of the
      :data:`TOP` depth-1 layers with the most GPU time; ``top_kernels``: name, launches, kernel_time_ns (ns),
      share_of_kernel_time of the kernels with the most time.
    - ``checks``: kernel_id, name, check, detail (physics_checks findings).
    - ``time``: the run's time-based roofline (:class:`TimeRoofline`, kernels at DRAM), or None with ``time_note``
      saying why.
    - ``previous``: the latest earlier run with the same labels, or None; ``comparison``: this run compared with it
      (:class:`Comparison`; bounds on the roofs of ``--ceilings`` as the charts are, each run's own report peaks
      for ``default`` and ``all``), or None with ``comparison_note`` saying why it was skipped when there was one;
      ``comparison_note`` also says when the bounds fell back to the report peaks (the source lacks a machine).
    - ``roofs``: the ``--ceilings`` choice the roofline and the time-based roofline are drawn against
      (:data:`rooflake.views.ceilings.CHOICES`); ``roofline_note``: why there is no hierarchical roofline when that
      source has no ceiling of the run's machine (the :class:`RooflineDataError` of
      :func:`rooflake.views.ceilings.run_roofs`) or no kernel of the run has roofline counters (what it lacks:
      :func:`rooflake.views.roofline.no_counters`), else None.
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
    roofs: str = "default"
    roofline_note: str | None = None


@dataclass(frozen=True)
class Report:
    """The runs a report covers (``run_ids``, oldest first) and one :class:`RunReport` per run (``runs``)."""

    run_ids: list[str]
    runs: list[RunReport]


def parse_since(text: str) -> timedelta:
    """``30m``, ``24h``, ``7d`` -> a timedelta, longer than zero and ending after year 1 (the start of the calendar
    a timestamp holds). Raises :class:`BadArgument` on anything else (``0m``, ``800000d``, ``24x``)."""
    units = {"m": "minutes", "h": "hours", "d": "days"}
    num, unit = text[:-1], text[-1:]
    if unit not in units or not num.replace(".", "", 1).isdigit():
        raise BadArgument(f"--since {text!r}: use a number and m, h or d (e.g. 24h)")
    try:
        span = timedelta(**{units[unit]: float(num)})
        datetime.now(timezone.utc) - span
    except OverflowError:
        raise BadArgument(f"--since {text!r}: reaches back before year 1; give a shorter span") from None
    if span <= timedelta(0):
        raise BadArgument(f"--since {text!r}: a span of zero selects no run; give a longer one (e.g. 24h)")
    return span


def _selection(since: timedelta | None, where: dict[str, str] | None) -> dict[str, Any]:
    """The parameters $since, $label_keys, $label_values of steps ``report_runs`` and ``previous_run``."""
    where = where or {}
    epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
    return {
        "since": datetime.now(timezone.utc) - since if since is not None else epoch,
        "label_keys": sorted(where),
        "label_values": [where[k] for k in sorted(where)],
    }


def select_runs(
    store: Any,
    *,
    since: timedelta | None = None,
    run_ids: list[str] | None = None,
    where: dict[str, str] | None = None,
) -> list[str]:
    """Run ids for a report, oldest first: the given ids (prefixes), or those ingested within ``since`` (default:
    all), keeping runs whose labels hold every ``where`` pair. Raises :class:`RunNotFoundError`."""
    return _select(store, since, run_ids, where)[0]


def _select(
    store: Any, since: timedelta | None, run_ids: list[str] | None, where: dict[str, str] | None
) -> tuple[list[str], Any]:
    """:func:`select_runs`' ids and the store it read them from: with ``run_ids``, a :class:`Store` of the given
    runs only (read only their files), whose database :func:`report_runs` reuses when every given run is kept."""
    from rooflake.store import Store

    given = [store.resolve(r) for r in run_ids or []]
    scope = Store(store.root, only_runs=given) if run_ids else store
    params = _selection(None if run_ids else since, where)
    picked = fetch(connect(scope), "report_runs", params)["run_id"].to_pylist()
    if run_ids:
        keep = set(picked)
        ids = [rid for rid in given if rid in keep]
    else:
        ids = picked
    if not ids:
        raise RunNotFoundError(f"no run in store {store.root} matches the report's selection")
    return ids, scope


def previous_runs(store: Any, ids: list[str]) -> dict[str, str | None]:
    """For each of ``ids``, the latest earlier run with the same (non-empty) labels, or None (step
    ``previous_run``)."""
    rows = fetch(connect(store), "previous_run", {"run_ids": ids, **_selection(None, None)}).to_pylist()
    return {r["run_id"]: r["previous_run_id"] for r in rows}


def _selected_with_previous(
    store: Any, since: timedelta | None, where: dict[str, str] | None
) -> tuple[list[str], dict[str, str | None]]:
    """:func:`select_runs` without given runs and :func:`previous_runs` of its runs from one scan of the runs table
    (step ``previous_run`` selecting as ``report_runs`` does). Raises :class:`RunNotFoundError`."""
    rows = fetch(connect(store), "previous_run", {"run_ids": None, **_selection(since, where)}).to_pylist()
    if not rows:
        raise RunNotFoundError(f"no run in store {store.root} matches the report's selection")
    return [r["run_id"] for r in rows], {r["run_id"]: r["previous_run_id"] for r in rows}


def report(
    store: Any,
    *,
    since: str | None = None,
    run_ids: list[str] | None = None,
    where: dict[str, str] | None = None,
    ceilings: str = "default",
) -> Report:
    """The data of a report over the runs :func:`select_runs` picks (``since``: ``30m``, ``24h``, ``7d``), each with
    the previous run of its labels: :func:`report_runs` with every run read. Raises as :func:`report_runs`."""
    ids, runs = report_runs(store, since=since, run_ids=run_ids, where=where, ceilings=ceilings)
    return Report(ids, list(runs))


def report_runs(
    store: Any,
    *,
    since: str | None = None,
    run_ids: list[str] | None = None,
    where: dict[str, str] | None = None,
    ceilings: str = "default",
    drawn: Callable[[str, str, Any], None] | None = None,
) -> tuple[list[str], Iterator[RunReport]]:
    """The run ids of a report (oldest first) and their :class:`RunReport` one at a time (``rl report`` renders a
    run's charts while the next are built). The selection, the previous runs, the launch overheads and every query
    are done before this returns, each once for all the runs (:func:`run_reports`), so it raises
    :class:`UsageError` (bad ``since`` or ``ceilings``) and :class:`RunNotFoundError` (no run selected) itself.

    ``ceilings``: the roofs of the roofline and time-based roofline charts, as ``rl roofline --ceilings`` takes
    them (:data:`rooflake.views.ceilings.CHOICES`; see :func:`run_reports`).

    Reads only the files of those runs and of their previous runs, and the ``runs`` table once to find the
    previous runs (at 10,000 runs its files take 2 s): without ``run_ids`` in the scan that selects the runs, with
    them on a thread while their own tables are read. The launch overheads and the time-based rooflines, whose t_o
    may come from another run read (:func:`launch_overheads`: an nsys run of the same GPU), are asked once, over
    every run read (the report's and their previous runs), once the previous runs are known, so a report's numbers
    are those of the views over all of them.

    ``drawn``, when given, is called with each run's chart data as soon as they are read, before the report's
    other tables (physics_checks, top layers and kernels) and the comparisons: ``drawn("hierarchical roofline",
    run_id, (points, ceilings))`` for each run with a roofline point (the :class:`RunReport` fields of those
    names), then ``drawn("time-based roofline", run_id, time)`` for each run with a time-based roofline. ``rl
    report`` starts laying out the charts there (:func:`rooflake.render.report.lay_out`); an error it raises is
    raised here."""
    from concurrent.futures import ThreadPoolExecutor

    _check_choice(ceilings)
    after = parse_since(since) if since else None
    if run_ids:  # their own files give them; the previous runs are read meanwhile
        ids, scope = _select(store, None, run_ids, where)
        own = _of_runs(scope, ids)
        with ThreadPoolExecutor(1, thread_name_prefix="rl-previous-runs") as pool:
            asked = pool.submit(previous_runs, store, ids)
            tables = _tables(own, ids, ceilings)
            previous = asked.result()
    else:  # one scan of the runs table gives both
        ids, previous = _selected_with_previous(store, after, where)
        own = _of_runs(store, ids)
        tables = _tables(own, ids, ceilings)
    _choose_roofs(own, store, ids, ceilings, tables)  # the whole store's: no other thread reads it now
    # each chart handed over as soon as it can be drawn; not beside the thread's scan (work beside it cost ~30 %
    # more CPU: 30 runs of a 10,000-run store 1.01x with the rooflines and tables read during the scan, 0.92x after)
    _draw_rooflines(drawn, ids, tables)
    reads = sorted(set(ids) | {p for p in previous.values() if p})
    part = own if len(reads) == len(ids) else _of_runs(store, reads)
    times = _times(part, ids, tables, ceilings)
    _draw_times(drawn, times)
    _more_tables(own, ids, ceilings, tables)
    return ids, (_run_report(part, rid, tables, times[rid], previous.get(rid), ceilings) for rid in ids)


def _draw_rooflines(
    drawn: Callable[[str, str, Any], None] | None, ids: list[str], tables: dict[str, Any]
) -> None:
    """``drawn("hierarchical roofline", run_id, (points, ceilings))`` (:func:`report_runs`) for each of ``ids``
    with a roofline point and roofs from the chosen source; nothing when ``drawn`` is None."""
    if drawn is None:
        return
    for rid in ids:
        points, ceilings, note = _roofline_rows(tables, rid)
        if note is None and points.num_rows:
            drawn("hierarchical roofline", rid, (points, ceilings))


def _draw_times(
    drawn: Callable[[str, str, Any], None] | None, times: dict[str, TimeRoofline | RooflakeError]
) -> None:
    """``drawn("time-based roofline", run_id, time)`` (:func:`report_runs`) for each run with a time-based
    roofline; nothing when ``drawn`` is None."""
    if drawn is None:
        return
    for rid, time in times.items():
        if isinstance(time, TimeRoofline):
            drawn("time-based roofline", rid, time)


def _of_runs(store: Any, ids: list[str]) -> Any:
    """A :class:`Store` whose views read the runs ``ids`` only: ``store`` itself when its views read exactly
    those (every run of a report over the whole store, or the given runs :func:`_select` read), whose database is
    built already (building it again took ~0.05 s at 10 and at 30 runs: the views bound, the macros created),
    else a new one."""
    from rooflake.store import Store

    if set(ids) == set(store.published()):
        return store
    return Store(store.root, only_runs=ids)


def run_reports(
    store: Any,
    run_ids: list[str],
    previous: dict[str, str | None] | None = None,
    overheads: dict[str, LaunchOverhead] | None = None,
    ceilings: str = "default",
) -> Iterator[RunReport]:
    """The :class:`RunReport` of each of ``run_ids`` (full ids), in their order; ``previous``: the run each is
    compared with (none when missing); ``overheads``: the t_o of each one's time-based roofline (default:
    :func:`launch_overheads`). Every table comes from one statement for all the runs (runs rows, kernel_roofline,
    run_ceilings, physics_checks, top layers and kernels, time_roofline: :func:`time_rooflines`), run here, before
    the first report is taken; the comparisons run one per run as the reports are taken (:func:`compare`).

    ``ceilings`` (default | report | datasheet | ert | measured | all): the roofs both rooflines are drawn against,
    with the meaning of ``rl roofline --ceilings``: other than ``default``, each run's roofs come from
    :func:`rooflake.views.ceilings.run_roofs` (once per run, shared by both charts), its kernel_roofline points
    against them (step ``chosen_kernel_roofs`` shadowing kernel_roofs, as :func:`rooflake.views.roofline.roofline`
    reads them) and ``ceilings`` holds their rows; a run whose machine has no ceiling from that source gets a
    ``roofline_note`` (and its time-based roofline the same error) instead of failing the report. ``default``
    keeps what the report always drew: the hierarchical roofline on each launch's own report peaks (run_ceilings),
    the time-based one on :func:`rooflake.views.ceilings.run_roofs`' default (else measured, else datasheet).
    Raises :class:`UsageError` for an unknown ``ceilings``."""
    _check_choice(ceilings)
    previous = previous or {}
    tables = _tables(store, run_ids, ceilings)
    _choose_roofs(store, store, run_ids, ceilings, tables)
    times = _times(store, run_ids, tables, ceilings, overheads)
    _more_tables(store, run_ids, ceilings, tables)
    return (_run_report(store, rid, tables, times[rid], previous.get(rid), ceilings) for rid in run_ids)


def _check_choice(ceilings: str) -> None:
    if ceilings not in CHOICES:
        raise UsageError(f"unknown ceiling source {ceilings!r} (one of {', '.join(CHOICES)})")


def _times(
    store: Any,
    run_ids: list[str],
    tables: dict[str, Any],
    ceilings: str,
    overheads: dict[str, LaunchOverhead] | None = None,
) -> dict[str, TimeRoofline | RooflakeError]:
    """The time-based roofline of each of ``run_ids`` over ``store`` (:func:`time_rooflines`, t_o
    :func:`launch_overheads` unless given), against the roofs :func:`_tables` chose; given the ``kernel_roofline``
    rows already read, which :func:`time_rooflines` reads where they hold for its statements."""
    overheads = overheads or launch_overheads(store, run_ids)
    return time_rooflines(
        store, overheads, tables["runs"], ceilings=ceilings, run_ceilings=tables["run_ceilings"],
        roofs=tables["roofs"], points=tables["kernel_roofline"],
    )  # fmt: skip


def _roofs(
    store: Any, run_ids: list[str], ceilings: str, tables: dict[str, Any]
) -> dict[str, RunRoofs | RooflakeError]:
    """Each run's :func:`rooflake.views.ceilings.run_roofs` of ``ceilings`` over ``store`` (the whole store: ERT
    and measured ceilings are runs of their own, labelled for the machine), from the runs rows and run_ceilings
    rows already read; the error it raises for a run in its place."""
    out: dict[str, RunRoofs | RooflakeError] = {}
    for rid in run_ids:
        try:
            own = _of(tables["run_ceilings"], rid)
            out[rid] = run_roofs(store, rid, ceilings, info=tables["runs"][rid], report=own)
        except RooflakeError as e:
            out[rid] = e
    return out


def _choose_roofs(
    store: Any, roofs_store: Any, run_ids: list[str], ceilings: str, tables: dict[str, Any]
) -> None:
    """With ``ceilings`` other than ``default``, fill ``tables`` (:func:`_tables`'s) with ``roofs``: each run's
    (:func:`_roofs` over ``roofs_store``) and ``kernel_roofline``: every run's points against them, from one
    statement over ``store`` (kernel_roofs shadowed: :func:`rooflake.views.time_roofline.chosen_kernel_roofs`)."""
    if ceilings == "default":
        return
    tables["roofs"] = _roofs(roofs_store, run_ids, ceilings, tables)
    con = connect(store)
    shadow = chosen_kernel_roofs(con, run_ids, tables["roofs"])
    tables["kernel_roofline"] = fetch(con, "kernel_roofline", filters={"run_id": run_ids}, tables=shadow)


def _tables(store: Any, run_ids: list[str], ceilings: str = "default") -> dict[str, Any]:
    """The tables the charts of every run of a report draw, each from one statement: kernel_roofline (with
    ``ceilings`` other than ``default``, left to :func:`_choose_roofs`), run_ceilings (Arrow, with run_id),
    ``runs``: each run's runs row (dict), and ``roofs``: None (:func:`_choose_roofs` sets it). The others:
    :func:`_more_tables`."""
    con = connect(store)
    every = {"run_id": run_ids}
    out: dict[str, Any] = {}
    if ceilings == "default":  # the report's own roofs: as it always read them
        out["kernel_roofline"] = fetch(con, "kernel_roofline", filters=every)
    out["run_ceilings"] = fetch(con, "run_ceilings", filters=every)
    # as rows: a TIMESTAMPTZ through pyarrow's to_pylist imports pandas (~0.1 s of every report)
    info = row_dicts(fetch(con, "report_run_info", {"run_ids": run_ids}, as_pylist=True))
    out["runs"] = {r["run_id"]: r for r in info}
    out["roofs"] = None
    return out


def _more_tables(store: Any, run_ids: list[str], ceilings: str, tables: dict[str, Any]) -> None:
    """Add to ``tables`` (:func:`_tables`'s) the report's tables no chart draws, each from one statement for every
    run: physics_checks, top_layers, top_kernels (Arrow, with run_id)."""
    con = connect(store)
    every = {"run_id": run_ids}
    if ceilings == "default":
        # physics_checks reads kernel_roofline twice: these runs' rows, computed once (half its time; same rows)
        shadow = {"kernel_roofline": tables["kernel_roofline"]}
        tables["physics_checks"] = fetch(con, "physics_checks", filters=every, tables=shadow)
    else:
        tables["physics_checks"] = fetch(con, "physics_checks", filters=every)
    p = {"run_ids": run_ids, "top": TOP}
    tables.update({name: fetch(con, name, p) for name in ("top_layers", "top_kernels")})


def _roofline_rows(tables: dict[str, Any], run_id: str) -> tuple[Any, Any, str | None]:
    """``run_id``'s roofline points and roof rows (:class:`RunReport`'s ``points`` and ``ceilings``) from the
    report's ``tables``, and why the source of ``--ceilings`` has none for its machine, or None."""
    roofs = (tables["roofs"] or {}).get(run_id)
    roofs_rows = roofs.rows if isinstance(roofs, RunRoofs) else _of(tables["run_ceilings"], run_id)
    return (
        _of(tables["kernel_roofline"], run_id),
        roofs_rows,
        str(roofs) if isinstance(roofs, RooflakeError) else None,
    )


def _bounds_on(ceilings: str) -> str:
    """The source a report's comparison takes its bounds against for its ``--ceilings`` choice: that source, or
    ``default`` (each run's own report peaks) for ``default`` and ``all`` (whose other sources are overlays)."""
    return "default" if ceilings in ("default", "all") else ceilings


def _compare(
    store: Any, previous: str, run_id: str, ceilings: str, roofs: dict[str, Any] | None
) -> Comparison:
    """``run_id`` compared with ``previous``, bounds on the roofs the report's ``ceilings`` draw (as the charts:
    ``roofs``, the report's runs', are not taken again); where that source has no ceiling for a run's machine, on
    each run's own report peaks (the comparison's ``ceilings`` says which). Raises as
    :func:`rooflake.views.compare.compare`."""
    try:
        return compare(store, previous, run_id, ceilings=_bounds_on(ceilings), roofs=roofs)
    except RooflineDataError:
        return compare(store, previous, run_id)


def _of(table: Any, run_id: str, drop: bool = False) -> Any:
    """The rows of ``run_id`` (in their order), without the ``run_id`` column when ``drop``."""
    mine = rows_where(table, "run_id", run_id)
    return mine.select([c for c in mine.column_names if c != "run_id"]) if drop else mine


def _missing(store: Any, tables: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """What each run of the report without a roofline point lacks (:func:`rooflake.views.roofline.missing_counters`,
    one statement for all of them: one per run took ~20 ms each), read at the first such run, kept in ``tables``."""
    if "missing_counters" not in tables:
        drawn = set(tables["kernel_roofline"]["run_id"].to_pylist())
        bare = [rid for rid in tables["runs"] if rid not in drawn]
        tables["missing_counters"] = missing_counters(connect(store), bare, "all")
    return tables["missing_counters"]


def _run_report(
    store: Any,
    run_id: str,
    tables: dict[str, Any],
    time: TimeRoofline | RooflakeError,
    previous: str | None,
    ceilings: str = "default",
) -> RunReport:
    """One run's :class:`RunReport` from the tables of every run of the report (:func:`_tables`) and its
    time-based roofline; its comparison with ``previous`` runs here."""
    comparison, comparison_note = None, None
    if previous:
        try:
            comparison = _compare(store, previous, run_id, ceilings, tables["roofs"])
        except RooflakeError as e:
            comparison_note = f"no comparison with the previous run of the same labels {previous}: {e}"
        else:
            if comparison.ceilings != _bounds_on(ceilings):
                comparison_note = (
                    f"the comparison's bounds are on each run's own report peaks: the {ceilings} ceilings do not "
                    f"cover both runs"
                )
    points, roofs_rows, note = _roofline_rows(tables, run_id)
    # a run without roofline counters: what it lacks, as rl roofline says (the chart said "of 0 kernel(s)")
    if note is None and points.num_rows == 0:
        note = str(
            no_counters(connect(store), tables["runs"][run_id], "all", _missing(store, tables)[run_id])
        )
    return RunReport(
        run_id,
        tables["runs"][run_id],
        points,
        roofs_rows,
        _of(tables["top_layers"], run_id, drop=True),
        _of(tables["top_kernels"], run_id, drop=True),
        _of(tables["physics_checks"], run_id).select(["kernel_id", "name", "check", "detail"]),
        None if isinstance(time, RooflakeError) else time,
        f"no time-based roofline: {time}" if isinstance(time, RooflakeError) else None,
        previous,
        comparison,
        comparison_note,
        ceilings,
        note,
    )
