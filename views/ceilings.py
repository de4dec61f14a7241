"""Every ceiling known for a machine, side by side by source: the report's peaks at the profiled clock, the
datasheet's at the boost clock, ERT's empirical values and measured ones, with the ratios between them.

Sources (``ceilings.source``): ``ncu-report`` (peak_sustained x the unit clock of each launch, ncu's roofline
sections), ``measured`` (``rl ceilings measure``), ``ert`` and ``ert-spec`` (Empirical Roofline Toolkit
``roofline.json``, ingested with ``--label machine=NAME``), ``datasheet`` (:mod:`rooflake.schema.datasheets`,
matched by GPU name and compute capability). A machine is named by a run's ``gpu_name`` and its ``machine`` and
``gpu`` labels, or by ``--gpu NAME``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from rooflake.queries import connect, fetch
from rooflake.schema import BadArgument, RooflineDataError, UsageError
from rooflake.schema import ceiling_sources as registry
from rooflake.schema import datasheets as ds

#: --ceilings choices -> ceilings.source values (the ceiling_sources registry: each choice's first source by
#: precedence); 'default' tries DEFAULT_ORDER's in order (the report's own where it has them, else measured, else
#: datasheet)
SOURCES = registry.source_of()
DEFAULT_ORDER = registry.default_order()
#: the source of a run's own peaks (ncu-report), whichever reader wrote them
REPORT = registry.report_source()


@dataclass(frozen=True)
class MachineCeilings:
    """The ceilings of one machine.

    - ``machine``: dict of run_id (the run asked about, or None for ``--gpu``), gpu_name, compute_capability,
      datasheet_gpu (catalog key or None), names (the lower-case names runs were matched by).
    - ``rows``: one row per source x ceiling (step ``machine_ceilings``): source, ceiling, kind, value, value_min,
      value_max (byte/s, FLOP/s or op/s), unit, clock_hz (Hz), n_rows, run_ids, formula, source_name, measured_at.
    - ``side_by_side``: one row per ceiling (step ``ceilings_side_by_side``): ceiling, kind, unit,
      report_ceiling (the report's ceiling behind ``report``: its fastest dense path for tensors), report,
      report_clock_hz, datasheet, datasheet_clock_hz, ert, measured, and the ratios report_over_datasheet,
      clock_ratio (report clock / datasheet boost clock), report_per_clock_over_datasheet, ert_over_datasheet,
      measured_over_datasheet, ert_over_report, measured_over_report.
    """

    machine: dict[str, Any]
    rows: Any
    side_by_side: Any

    def select(self, which: str = "default") -> Any:
        """The ``rows`` of one source: ``report``, ``measured``, ``ert``, ``datasheet``, ``all``, or ``default``
        (the first of report, measured, datasheet that has any ceiling). Raises :class:`UsageError` for another
        name."""
        if which == "all":
            return self.rows
        if which == "default":
            present = set(self.rows.column("source").to_pylist())
            source = next((s for s in DEFAULT_ORDER if s in present), DEFAULT_ORDER[0])
        elif which in SOURCES:
            source = SOURCES[which]
        else:
            raise UsageError(
                f"unknown ceiling source {which!r} (one of {', '.join([*SOURCES, 'all', 'default'])})"
            )
        return self.rows.filter(pc.equal(self.rows.column("source"), source))


def machine_ceilings(store: Any, run_id: str | None = None, gpu: str | None = None) -> MachineCeilings:
    """Every ceiling known for the machine of run ``run_id`` (a unique prefix; None and no ``gpu``: the latest run)
    or of GPU ``gpu`` (a device name as profilers write it, a catalog key such as ``H100 PCIe``, or a label value).

    Report peaks: ncu's ``X.peak_sustained x <unit>__cycles_elapsed.avg.per_second`` (the roofline sections), of
    the run asked about, or with ``gpu`` of every run of that GPU. Datasheet: dense peaks at the boost clock.
    Returns :class:`MachineCeilings`. Raises :class:`UsageError` for both arguments at once or a ``gpu`` that names
    several catalog GPUs, :class:`RunNotFoundError` for an unknown run, :class:`RooflineDataError` when no source
    knows any ceiling of the machine (the message says how to add one).
    """
    if run_id is not None and gpu is not None:
        raise BadArgument("give a run or --gpu, not both")
    con = connect(store)
    machine = _by_gpu(con, gpu) if gpu is not None else _by_run(con, store.resolve(run_id))
    rows = _machine_rows(con, machine)
    if rows.num_rows == 0:
        who = f"run {machine['run_id']}" if machine["run_id"] else f"GPU {gpu!r}"
        raise RooflineDataError(
            f"no ceilings known for {who} ({machine['gpu_name'] or 'GPU unknown'}): no report peaks, no ERT or "
            f"measured run named for it, and no datasheet entry. Add one with `rl ingest roofline.json --label "
            f"machine=NAME` (ERT) or `rl ceilings measure`; label runs with --label gpu=NAME to match them"
        )
    side = fetch(con, "ceilings_side_by_side", tables={"machine_ceiling_rows": rows})
    return MachineCeilings(machine, rows, side)


#: ``--ceilings`` values of the roofline views (``default``: :data:`DEFAULT_ORDER`; ``all``: every source, the
#: default one under the points, the others drawn beside it)
CHOICES = ("default", *registry.choices(), "all")
_CHOICE_OF = registry.choice_of()
#: sources that are the machine's, not the run's own (a run's own peaks are its report's, whatever the reader)
_MACHINE_SOURCES = registry.machine_sources()
_HINTS = registry.hints()


@dataclass(frozen=True)
class RunRoofs:
    """The roofs a roofline view of one run is drawn against (``--ceilings``).

    - ``run_id``: the run; ``choice``: as asked (:data:`CHOICES`); ``machine``: as :attr:`MachineCeilings.machine`.
    - ``source``: the ``ceilings.source`` the points are against (``ncu-report``, ``measured``, ``ert``,
      ``ert-spec``, ``datasheet``); None when no source knows a ceiling of the machine (``default`` only; ``rows``
      is then empty).
    - ``rows``: step ``source_run_ceilings``: run_ceilings' columns (run_id, machine_key, ceiling, kind, value,
      value_min, value_max in byte/s, FLOP/s or op/s, clock_hz in Hz, unit, formula, source, n_kernels, n_invalid)
      plus ``source_label`` (the legend's text) and ``overlay`` (true for the sources drawn beside ``source``).
    - ``tables``: what the view's queries read instead of ``kernel_roofs`` and ``run_roofs`` (steps
      ``chosen_kernel_roofs``, ``chosen_run_roofs``: every kernel against ``source``'s roofs), for
      :func:`rooflake.queries.fetch`'s ``tables``; None for ``ncu-report``, whose per-launch peaks
      (peak_sustained x each launch's clock) the queries read themselves.
    """

    run_id: str
    choice: str
    source: str | None
    machine: dict[str, Any]
    rows: Any
    tables: dict[str, Any] | None


def run_roofs(
    store: Any,
    run_id: str | None,
    ceilings: str = "default",
    *,
    info: dict[str, Any] | None = None,
    report: pa.Table | None = None,
) -> RunRoofs:
    """The roofs of run ``run_id`` (a unique prefix; None = the latest run) from source ``ceilings``: ``report``
    (the run's own peaks: ncu ``X.peak_sustained`` x the unit clock the run was profiled at), ``datasheet`` (dense
    peaks at the boost clock, :mod:`rooflake.schema.datasheets`, matched by GPU name and compute capability),
    ``ert`` (Empirical Roofline Toolkit results labelled for the machine), ``measured`` (``rl ceilings measure``),
    ``all`` (every source: the default one under the points, the others overlaid) or ``default`` (the report's
    own where it has them, else measured, else datasheet: :data:`DEFAULT_ORDER`). An nsys run has no report peaks:
    it gets measured or datasheet roofs.

    Returns :class:`RunRoofs`. Raises :class:`UsageError` for an unknown ``ceilings``, :class:`RunNotFoundError`,
    :class:`RooflineDataError` when the source asked for has no ceiling of the run's machine (the message names
    the run, the machine, the sources that have some and how to add the one asked for). ``info``: the run's
    ``runs`` row when the caller has it (:func:`rooflake.views.runs.run_info`), so it is not read again; ``report``:
    likewise its ``run_ceilings`` rows (``rl report`` reads every run's at once).
    """
    if ceilings not in CHOICES:
        raise UsageError(f"unknown ceiling source {ceilings!r} (one of {', '.join(CHOICES)})")
    con = connect(store)
    run_id = store.resolve(run_id)
    machine = _by_run(con, run_id, info)
    if report is None:
        report = fetch(con, "run_ceilings", filters={"run_id": run_id})
    # the report's own peaks win (default) or are asked for: no other run's ceilings are read, which would list
    # every run of the store (7 s of an 8 s `rl roofline RUN` at 10,000 uncompacted runs)
    none = pa.Table.from_batches([], MACHINE_CEILINGS)  # empty_table() imports pandas (a timestamp column)
    own_only = ceilings in ("default", _CHOICE_OF[REPORT]) and REPORT in _present(report, none)
    others = none if own_only else _machine_rows(con, machine)
    present = _present(report, others)
    primary = _primary(run_id, machine, ceilings, present)
    sources = present if ceilings == "all" else [primary] if primary else []
    params = {"run_id": run_id, "machine": machine["datasheet_gpu"] or machine["gpu_name"], "sources": sources,
              "primary": primary or ""}  # fmt: skip
    given = {"run_ceiling_rows": report, "machine_ceiling_rows": others}
    rows = fetch(con, "source_run_ceilings", params, tables=given)
    tables = None
    if primary not in (None, REPORT):
        chosen = {"chosen_ceilings": rows.filter(pc.invert(rows.column("overlay")))}
        tables = {
            "kernel_roofs": fetch(con, "chosen_kernel_roofs", {"run_id": run_id}, tables=chosen),
            "run_roofs": fetch(con, "chosen_run_roofs", {"run_id": run_id}, tables=chosen),
        }
    return RunRoofs(run_id, ceilings, primary, machine, rows, tables)


def source_ceilings(store: Any, run_id: str | None, source: str = "default") -> pa.Table:
    """The ceilings of run ``run_id`` from ``source`` (see :func:`run_roofs`), shaped like ``run_ceilings`` (same
    columns) plus ``source_label`` and ``overlay``. Raises as :func:`run_roofs`."""
    return run_roofs(store, run_id, source).rows


def _present(report: pa.Table, others: pa.Table) -> list[str]:
    """The ``ceilings.source`` values with a valid ceiling for the run: ``ncu-report`` for its own peaks (whatever
    their reader calls them), the machine's other sources; in the registry's precedence
    (:func:`rooflake.schema.ceiling_sources.names`), unknown sources last."""
    # in Python: pyarrow converting the 0 of pc.greater imports pandas (+0.25 s of CPU)
    values, names = report.column("value").to_pylist(), report.column("source").to_pylist()
    found = {
        REPORT
        for v, s in zip(values, names, strict=True)
        if v is not None and v > 0 and s not in _MACHINE_SOURCES
    }
    found |= {s for s in others.column("source").to_pylist() if s in _MACHINE_SOURCES}
    order = registry.names()
    return sorted(found, key=lambda s: order.index(s) if s in order else len(order))


def _primary(run_id: str, machine: dict[str, Any], choice: str, present: list[str]) -> str | None:
    """The source the points are against, or a :class:`RooflineDataError` when ``choice`` has none."""
    if choice in ("default", "all"):
        hit = next((s for s in DEFAULT_ORDER if s in present), None)
        if hit is not None or choice == "default":
            return hit
        if present:  # all: a machine known only from ERT
            return present[0]
    else:
        hit = next((s for s in present if _CHOICE_OF.get(s) == choice), None)
        if hit is not None:
            return hit
    sheet = f", datasheet: {machine['datasheet_gpu']}" if machine["datasheet_gpu"] else ", no datasheet entry"
    have = sorted({_CHOICE_OF.get(s, s) for s in present}, key=CHOICES.index)
    where = f"sources with ceilings for it: {', '.join(have)}" if have else "no source has a ceiling for it"
    what = "ceilings" if choice == "all" else f"{choice} ceilings"
    hints = dict(_HINTS)
    if machine["datasheet_gpu"]:
        hints["datasheet"] = (
            f"the datasheet catalog's entry {machine['datasheet_gpu']} holds no sourced number yet"
        )
    hint = hints.get(
        choice, "add some: " + "; ".join(f"{k}: {v}" for k, v in hints.items() if k != _CHOICE_OF[REPORT])
    )
    raise RooflineDataError(
        f"run {run_id} has no {what} for its machine ({machine['gpu_name'] or 'GPU unknown'}{sheet}); {where}. "
        f"To add them: {hint}"
    )


#: The columns of step ``machine_ceilings`` with their Arrow types (tests/test_ceilings_choice.py checks them
#: against the query's output): no row of it, when a run's own report peaks are all that is read.
MACHINE_CEILINGS = pa.schema(
    [
        *[(c, pa.string()) for c in ("source", "ceiling", "kind")],
        *[(c, pa.float64()) for c in ("value", "value_min", "value_max")],
        ("unit", pa.string()),
        ("clock_hz", pa.float64()),
        ("n_rows", pa.int64()),
        ("run_ids", pa.list_(pa.field("l", pa.string()))),  # DuckDB's name of a list's item
        *[(c, pa.string()) for c in ("formula", "source_name")],
        ("measured_at", pa.timestamp("us", tz="Etc/UTC")),
    ]
)


def _machine_rows(con: Any, machine: dict[str, Any]) -> pa.Table:
    """Step ``machine_ceilings`` for ``machine`` (a dict of :func:`_by_run` or :func:`_by_gpu`), over the runs
    step ``machine_runs`` names for it (so only their ceilings are read)."""
    named = {"run_id": machine["run_id"], "names": sorted(machine["names"]) or [""]}
    runs = fetch(con, "machine_runs", named).column("run_id").to_pylist()
    params = {"run_id": machine["run_id"], "runs": runs, "datasheet_gpu": machine["datasheet_gpu"]}
    return fetch(con, "machine_ceilings", params, tables={"datasheet_ceilings": ds.ceilings()})


def _by_run(con: Any, run_id: str, info: dict[str, Any] | None = None) -> dict[str, Any]:
    if info is None:
        info = fetch(con, "run_info", {"run_id": run_id}).to_pylist()[0]
    labels = dict(info.get("labels") or [])
    names = {n.lower() for n in (info["gpu_name"], labels.get("machine"), labels.get("gpu")) if n}
    cc = info["compute_capability"]
    key = next(
        (k for n in (info["gpu_name"], labels.get("gpu"), labels.get("machine")) if (k := ds.match(n, cc))),
        None,
    )
    return {
        "run_id": run_id,
        "gpu_name": info["gpu_name"],
        "compute_capability": cc,
        "datasheet_gpu": key,
        "names": names,
    }


def _by_gpu(con: Any, gpu: str) -> dict[str, Any]:
    key = ds.match(gpu)
    if key is None:
        hits = ds.candidates(gpu)
        if len(hits) > 1:
            raise UsageError(
                f"--gpu {gpu!r} names {len(hits)} GPUs of the datasheet catalog: {', '.join(hits)}"
            )
        key = hits[0] if hits else None
    names = {gpu.lower()}
    if key is not None:
        names.add(key.lower())
        stored = fetch(con, "gpu_names").column("name").to_pylist()
        names |= {n.lower() for n in stored if ds.match(n) == key}
    cc = next((g["compute_capability"] for g in ds.gpus() if g["gpu"] == key), None)
    return {"run_id": None, "gpu_name": gpu, "compute_capability": cc, "datasheet_gpu": key, "names": names}


def datasheet_table() -> pa.Table:
    """The datasheet catalog's ceilings (:func:`rooflake.schema.datasheets.ceilings`), for callers that join them
    in their own queries (pass it as ``tables={"datasheet_ceilings": ...}`` to :func:`rooflake.queries.fetch`)."""
    return ds.ceilings()


def sweep_roofs(
    store: Any, run_ids: list[str], ceilings: str = "default"
) -> tuple[dict[str, Any] | None, Any]:
    """The roofs of several runs drawn together (a trajectory's sweep), each run's as :func:`run_roofs` chooses
    them from ``ceilings`` (default | report | datasheet | ert | measured; ``all`` draws overlays a sweep chart has
    no place for: :class:`UsageError`). ``default`` reads the runs' own report peaks at once and asks
    :func:`run_roofs` only for the runs without (measured, else datasheet).

    Returns (``tables``, ``rows``): ``tables`` shadows ``run_roofs`` for :func:`rooflake.queries.fetch` (the store's
    rows of the runs on their report peaks, step ``chosen_run_roofs``'s of the others), or None when every run is on
    its report peaks; ``rows``: the ceilings the runs are against, run_ceilings' columns (run_id, machine_key,
    ceiling, kind, value in byte/s, FLOP/s or op/s, ..., source, n_kernels, n_invalid). Raises as
    :func:`run_roofs` (:class:`RooflineDataError` when a run's machine has no ceiling from the source asked for).
    """
    if ceilings == "all":
        raise UsageError(
            "ceilings 'all' draws other sources' roofs beside the default one, which a sweep of runs does not: "
            "choose report, datasheet, ert or measured"
        )
    con = connect(store)
    own = fetch(con, "run_ceilings", filters={"run_id": run_ids})
    columns = own.column_names
    # in Python, as _present: pyarrow converting the 0 of pc.greater imports pandas (+0.25 s of CPU)
    values = own.column("value").to_pylist()
    on_report = {
        r for r, v in zip(own.column("run_id").to_pylist(), values, strict=True) if v is not None and v > 0
    }
    asked = [r for r in run_ids if r not in on_report] if ceilings == "default" else list(run_ids)
    roofs = {r: run_roofs(store, r, ceilings) for r in asked}
    chosen = [x.tables["run_roofs"] for x in roofs.values() if x.tables]
    kept = [r for r in run_ids if r not in roofs or not roofs[r].tables]
    rows = pa.concat_tables(
        [own.filter(pc.is_in(own.column("run_id"), pa.array(kept, pa.string())))]
        + [x.rows.select(columns).cast(own.schema) for x in roofs.values() if x.tables]
    )
    if not chosen:
        return None, rows
    store_rows = fetch(con, "run_roofs", filters={"run_id": kept}) if kept else chosen[0].slice(0, 0)
    tables = {"run_roofs": pa.concat_tables([store_rows, *(t.cast(store_rows.schema) for t in chosen)])}
    return tables, rows
