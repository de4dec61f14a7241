"""The hierarchical roofline of one run (Yang et al., "Hierarchical Roofline analysis for GPUs", 2020; ncu
SpeedOfLight_Hierarchical*RooflineChart): one point per kernel (query ``kernel_roofline``) or per NVTX layer (step
``layer_roofline``) and precision, against the run's ceilings (``run_ceilings``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rooflake.queries import connect, fetch
from rooflake.schema import RooflineDataError, UsageError
from rooflake.schema.catalog import COLLECT_HINT
from rooflake.schema.duck import Rows
from rooflake.views.display import Displayed
from rooflake.views.layers import RunMatch, estimate_roofs_text, match_runs, no_layers
from rooflake.views.runs import run_info

LEVELS = ("dram", "l2", "l1", "all")
GRAINS = ("kernel", "layer", "op", "step")
_QUANTITIES = ["flops_fp64", "flops_fp32", "flops_fp16", "flops_tensor"]


@dataclass(frozen=True)
class Roofline(Displayed):
    """The roofline of one run.

    - ``run_id``: full run id; ``run``: its ``runs`` row (dict).
    - ``grain``: ``kernel`` or ``layer``; ``depth``: the NVTX depth of a layer.
    - ``points``: one row per kernel (or layer) x precision with FLOPs, kernel_roofline's columns: identity (run_id,
      kernel_id, name, short_name, nvtx_path; for layers kernel_id = layer number and the names = the layer),
      precision, is_dominant, duration_ns (ns), flops (FLOP), bytes_l1/l2/dram (byte), ai_l1/l2/dram (FLOP/byte),
      achieved_flops_per_s, peak_flops_per_s (FLOP/s), bw_l1/l2/dram (byte/s), ridge_* (FLOP/byte),
      attainable_* and attainable_flops_per_s (FLOP/s), fraction_of_roof, zero_flops, bound,
      levels_without_roof, above_roof, flags.
    - ``ceilings``: the roofs' rows (run_id, machine_key, ceiling, kind, value in byte/s or FLOP/s, ..., source,
      source_label, overlay: :func:`rooflake.views.ceilings.run_roofs`) for the run that holds the counters.
    - ``points`` and ``ceilings`` are pyarrow Tables, or with ``roofline(..., as_rows=True)`` on a run drawn
      against its own report peaks :class:`rooflake.schema.duck.Rows` of the same columns and values.
    - ``matched``: for layers of an nsys run with ``with_run``, the :class:`RunMatch` that lent the counters.
    - ``provenance``: for layers timed by nsys with an ``rl estimate`` run (:func:`estimate_roofline`), which numbers
      are measured and which modelled (``"time measured (nsys, ...), FLOPs and bytes modelled (rl estimate ID)"``).
    """

    run_id: str
    run: dict[str, Any]
    grain: str
    depth: int
    points: Any
    ceilings: Any
    matched: RunMatch | None = None
    provenance: str | None = None


def roofline(
    store: Any,
    run_id: str | None = None,
    level: str = "dram",
    *,
    grain: str = "kernel",
    depth: int = 1,
    with_run: str | None = None,
    ceilings: str = "default",
    as_rows: bool = False,
) -> Roofline:
    """The roofline of ``run_id`` (a unique prefix; None = the latest run) per kernel, or per NVTX layer at
    ``depth`` with ``grain='layer'`` (with ``with_run``: an nsys run whose layers take the FLOPs/bytes of ncu run
    ``with_run``, time-weighted by nsys's real durations; Wang et al., arXiv 2009.04598).

    ``level`` (dram | l2 | l1 | all) is the memory level the caller draws: a kernel roofline needs a kernel with FLOPs
    and bytes there. Raises :class:`RunNotFoundError`, :class:`UsageError` (bad ``level``, ``grain`` or
    ``with_run`` without layers), :class:`RooflineDataError` (no point has the counters: the message names the
    missing metrics, from ``kernels.provenance``, and how to collect them).

    ``ceilings`` (default | report | datasheet | ert | measured | all): the source of the roofs
    (:func:`rooflake.views.ceilings.run_roofs`); the points' peaks, attainable, fraction_of_roof and bound are
    against that source's roofs (``all``: the default source's; the others are drawn beside it), and ``ceilings``
    holds its rows (run_ceilings' columns plus source_label and overlay). A source without ceilings for the run's
    machine raises :class:`RooflineDataError`.

    ``as_rows``: per kernel on the run's own report peaks (``ceilings`` default or report), ``points`` and
    ``ceilings`` are :class:`rooflake.schema.duck.Rows` of the same values, read without importing pyarrow.
    """
    if level not in LEVELS:
        raise UsageError(f"unknown level {level!r} (choose one of: {', '.join(LEVELS)})")
    if grain not in GRAINS:
        raise UsageError(f"unknown grain {grain!r} (choose one of: {', '.join(GRAINS)})")
    if with_run is not None and grain == "kernel":
        raise UsageError(
            "an ncu run lends its counters to the layers of an nsys run: use layers (--by layer)"
        )
    run_id = store.resolve(run_id)
    if grain in ("op", "step") or (grain == "layer" and with_run is None and from_shapes(store, run_id)):
        return _trace_roofline(store, run_id, grain, depth, level, ceilings)
    if grain == "layer":
        return _layer_roofline(store, run_id, depth, with_run, level, ceilings)
    con = connect(store)
    run = run_info(con, run_id)
    if as_rows and ceilings in ("default", "report"):
        own = _own_roofline(con, run, run_id, level, depth)
        if own is not None:
            return own
    from rooflake.views.ceilings import run_roofs  # pyarrow: only where the rows path does not apply

    roofs = run_roofs(store, run_id, ceilings, info=run)
    points = fetch(con, "kernel_roofline", filters={"run_id": run_id}, tables=roofs.tables)
    if not _has_counters(points, _levels(level)):
        raise no_counters(con, run, level)
    return Roofline(run_id, run, grain, depth, points, roofs.rows)


def from_shapes(store: Any, run_id: str) -> bool:
    """A run whose recorded ops carry FLOPs from their shapes and whose kernels have no counters (a trace)."""
    from rooflake.views.ops import has_ops

    con = connect(store)
    return run_info(con, run_id)["source_format"] != "ncu-rep" and has_ops(con, run_id)


def _trace_roofline(store: Any, run_id: str, grain: str, depth: int, level: str, ceilings: str) -> Any:
    """The op or layer roofline of a trace run from its recorded shapes (:func:`rooflake.views.ops.op_roofline`:
    the datasheet's roofs)."""
    from rooflake.views.ops import op_roofline

    if ceilings not in ("default", "datasheet"):
        raise UsageError(
            f"ceilings {ceilings!r}: a trace run's ops are judged against the datasheet catalog's roofs of its GPU "
            "(the default, or datasheet)"
        )
    return op_roofline(store, run_id, grain=grain, depth=depth, level=level)


def no_counters(
    con: Any, run: dict[str, Any], level: str, missing: list[dict[str, Any]] | None = None
) -> RooflineDataError:
    """The error of a run (its ``runs`` row) with no kernel that has the counters of a ``level`` roofline (dram |
    l2 | l1 | all): what the run lacks (``missing``: its rows of :func:`missing_counters`, read here when not
    given) and how to collect it."""
    if missing is None:
        missing = missing_counters(con, [run["run_id"]], level)[run["run_id"]]
    what = "; ".join(f"{r['quantity']}: {r['reason'][5:].strip()}" for r in missing)
    which = "hierarchical" if level == "all" else level.upper()
    shapes = (
        " Its recorded ops have FLOPs from their shapes: draw them with --by op or --by layer."
        if run["source_format"] == "torch-trace"
        else ""
    )
    return RooflineDataError(
        f"run {run['run_id']} ({run['source_path']}) has no counters for a {which} roofline: "
        f"{what or 'no kernel has FLOP and byte counters'}. To collect them, {COLLECT_HINT}.{shapes}"
    )


def missing_counters(con: Any, run_ids: list[str], level: str) -> dict[str, list[dict[str, Any]]]:
    """What each of ``run_ids`` lacks for a ``level`` roofline, from one statement (step ``missing_counters``): per
    run, ``{"quantity", "reason"}`` of each derived quantity its ingest left NULL, with the reason it stored (none
    when every quantity was read)."""
    params = {"run_ids": run_ids, "quantities": _QUANTITIES + _bytes(_levels(level))}
    out: dict[str, list[dict[str, Any]]] = {rid: [] for rid in run_ids}
    for r in fetch(con, "missing_counters", params).to_pylist():
        out[r["run_id"]].append({"quantity": r["quantity"], "reason": r["reason"]})
    return out


def _own_roofline(con: Any, run: dict[str, Any], run_id: str, level: str, depth: int) -> Roofline | None:
    """The kernel roofline of ``run_id`` against its own report peaks as :class:`rooflake.schema.duck.Rows`
    (:func:`roofline`'s ``as_rows``); None when the run has no report peak or no point with counters (the Arrow
    path then picks its roofs or raises)."""
    roofs = fetch(con, "own_run_ceilings", {"run_id": run_id}, as_pylist=True)
    if not isinstance(roofs, Rows):  # a type DuckDB's values do not give as Arrow does: the Arrow path
        return None
    value = roofs.names.index("value")
    if not any(r[value] is not None and r[value] > 0 for r in roofs.rows):  # as run_roofs' _present
        return None
    points = fetch(con, "kernel_roofline", filters={"run_id": run_id}, as_pylist=True)
    if not isinstance(points, Rows) or not _rows_have_counters(points, _levels(level)):
        return None
    return Roofline(run_id, run, "kernel", depth, points, roofs)


def _rows_have_counters(points: Any, levels: list[str]) -> bool:
    """:func:`_has_counters` of :class:`rooflake.schema.duck.Rows`: some row has FLOPs and bytes at a level."""
    flops = points.names.index("flops")
    at = [points.names.index(f"bytes_{lv}") for lv in levels]
    return any(r[flops] is not None and any(r[i] is not None for i in at) for r in points.rows)


def _levels(level: str) -> list[str]:
    """The memory levels of a ``level`` roofline (dram | l2 | l1, or all three)."""
    return ["l1", "l2", "dram"] if level == "all" else [level]


def _bytes(levels: list[str]) -> list[str]:
    return [f"bytes_{lv}" for lv in levels]


def _has_counters(points: Any, levels: list[str]) -> bool:
    """Some point has FLOPs and bytes at one of ``levels`` (kernel_roofline rows exist only where FLOPs do)."""
    import pyarrow.compute as pc

    if points.num_rows == 0:
        return False
    has_bytes = pc.is_valid(points[f"bytes_{levels[0]}"])
    for lv in levels[1:]:
        has_bytes = pc.or_(has_bytes, pc.is_valid(points[f"bytes_{lv}"]))
    return bool(pc.any(pc.and_(pc.is_valid(points["flops"]), has_bytes)).as_py())


def _layer_roofline(
    store: Any, run_id: str, depth: int, with_run: str | None, level: str = "dram", ceilings: str = "default"
) -> Roofline:
    from rooflake.views.ceilings import run_roofs

    con = connect(store)
    if with_run is not None and run_info(con, store.resolve(with_run))["source_format"] == "torch-model":
        return estimate_roofline(store, run_id, with_run, depth=depth, level=level, ceilings=ceilings)
    matched = match_runs(store, run_id, with_run) if with_run is not None else None
    counters_run = matched.ncu_run if matched else run_id
    roofs = run_roofs(store, counters_run, ceilings)
    points = fetch(
        con,
        "layer_roofline",
        {"run_id": run_id, "depth": depth, "counters_run": counters_run},
        tables={**(roofs.tables or {}), **({"kernels": matched.store_kernels} if matched else {})} or None,
    )
    if points.num_rows == 0:
        hint = (
            "this run has no FLOP counters (an nsys run: add --with NCU_RUN, an ncu run of the same program)"
            if with_run is None
            else f"no kernel of run {run_id} matched a kernel of run {counters_run} with counters"
        )
        raise RooflineDataError(
            f"run {run_id}: no layer at depth {depth} has FLOPs: {hint}. To collect them, {COLLECT_HINT}."
        )
    return Roofline(run_id, run_info(con, run_id), "layer", depth, points, roofs.rows, matched)


def estimate_roofline(
    store: Any,
    run_id: str | None,
    estimates_run: str,
    *,
    depth: int = 1,
    level: str = "dram",
    ceilings: str = "default",
) -> Roofline:
    """The per-layer roofline of an Nsight Systems run ``run_id`` with the work of an ``rl estimate`` run
    ``estimates_run`` (step ``estimate_layer_roofline``): time per step measured (a run without GPU kernels, e.g. a
    CPU run of a model wrapped in :func:`rooflake.instrument.annotate`: the inclusive time of the layer's NVTX ranges,
    query ``range_times``; a GPU run: the kernel time under the layer, ``layer_summary``), FLOPs and compulsory bytes
    per step modelled (``estimates``), at the NVTX ``depth`` (1 = the forward/backward range, 2 = its modules, ...).
    The compulsory bytes stand at the level(s) drawn, ``level`` (dram | l2 | l1 | all): a lower bound of the traffic,
    so AI is an upper bound. attainable = min(P, AI·W) (Williams et al. 2009); time weighting as Wang et al. 2020.

    Roofs: for a run without kernels, the measured ceilings of its host (``rl ceilings measure``; the machine key of
    its ``threads`` label, step ``host_measured_ceilings``; ``ceilings`` default or measured); for a GPU run, its
    GPU's ceilings from source ``ceilings`` (:func:`rooflake.views.ceilings.machine_ceilings`; default | report |
    datasheet | ert | measured, not all). The compute roof is that of each layer's precision (its estimates' dtype;
    on Tensor Cores the tensor roof of that source type), NULL with ``peak_reason`` where missing (``provenance``).

    Returns a :class:`Roofline` (grain ``layer``; ``points`` with layer_roofline's columns plus steps, calls,
    launches, time_source, bytes_compulsory, ops, ops_without_flops, dtype, peak_reason; ``provenance`` says what is
    measured and what modelled). Raises :class:`RunNotFoundError`, :class:`UsageError` (a run of the wrong kind),
    :class:`RooflineDataError` (no ceilings from the source asked for, several machine keys, no layer at ``depth``).
    """
    if level not in LEVELS:
        raise UsageError(f"unknown level {level!r} (choose one of: {', '.join(LEVELS)})")
    run_id, estimates_run = store.resolve(run_id), store.resolve(estimates_run)
    con = connect(store)
    run, est = run_info(con, run_id), run_info(con, estimates_run)
    if est["source_format"] != "torch-model":
        raise UsageError(
            f"run {estimates_run} (--with) is a {est['source_format']} run, not an `rl estimate` run"
        )
    if not str(run["source_format"]).startswith("nsys"):
        raise UsageError(
            f"run {run_id} is a {run['source_format']} run: time per layer with an estimate run comes from an "
            "Nsight Systems run (rl profile --nsys)"
        )
    gpu = fetch(con, "run_kernel_count", {"run_id": run_id}).column("kernels")[0].as_py() > 0
    roofs, where = _gpu_roofs(store, run_id, ceilings) if gpu else _host_roofs(con, run, ceilings)
    params = {"run_id": run_id, "estimates_run_id": estimates_run, "depth": depth, "level": level}
    params |= {"timed_by": "kernels" if gpu else "ranges"}
    points = fetch(
        con, "estimate_layer_roofline", params, tables={"layer_roofs": roofs}, what=f"layers of run {run_id}"
    )
    if points.num_rows == 0:
        raise no_layers(run_id, depth)
    timed = "GPU kernel time" if gpu else "NVTX ranges on the CPU"
    provenance = (
        f"time measured (nsys, {timed}), FLOPs and bytes modelled (rl estimate {estimates_run}; bytes "
        f"compulsory), ceilings {where}, {estimate_roofs_text(points)}"
    )
    return Roofline(run_id, run, "layer", depth, points, roofs, None, provenance)


def _host_roofs(con: Any, run: dict[str, Any], ceilings: str = "default") -> tuple[Any, str]:
    """The measured ceilings of the CPU that ``run`` ran on, of one machine key, and the words naming them."""
    import pyarrow.compute as pc

    if ceilings not in ("default", "measured"):
        raise UsageError(
            f"ceilings {ceilings!r}: run {run['run_id']} has no GPU kernels, and a CPU's roofs are the ceilings "
            "measured on its host (rl ceilings measure): use measured or the default"
        )
    threads = dict(run.get("labels") or []).get("threads")
    rows = fetch(con, "host_measured_ceilings", {"host": run["host"], "threads": threads})
    keys = sorted(set(rows.column("machine_key").to_pylist()))
    if len(keys) != 1:
        found = f"several ({', '.join(keys)}): label the run with -l threads=N" if keys else "none"
        raise RooflineDataError(
            f"run {run['run_id']}: measured ceilings of host {run['host']!r}"
            f"{f' at {threads} threads' if threads else ''}: {found}. Measure them with "
            "`rl ceilings measure --threads N` on the machine the run ran on"
        )
    return rows.filter(pc.equal(rows["machine_key"], keys[0])), f"measured ({keys[0]})"


def _gpu_roofs(store: Any, run_id: str, ceilings: str = "default") -> tuple[Any, str]:
    """The ceilings of the run's GPU from source ``ceilings`` as :func:`rooflake.views.ceilings.machine_ceilings`
    picks them; :class:`RooflineDataError` when that source has none for the GPU."""
    import pyarrow as pa

    from rooflake.views.ceilings import machine_ceilings

    if ceilings == "all":
        raise UsageError(
            "ceilings 'all' draws other sources' roofs beside one run's own; an estimate's layers are judged "
            "against one source: choose report, datasheet, ert or measured"
        )
    rows = machine_ceilings(store, run_id).select(ceilings)
    gpu = run_info(connect(store), run_id)["gpu_name"]
    if rows.num_rows == 0 and ceilings != "default":
        raise RooflineDataError(
            f"run {run_id} ({gpu}): no {ceilings} ceilings for its GPU; see `rl ceilings RUN` for the sources that "
            "have some"
        )
    if "machine_key" not in rows.column_names:  # the GPU they hold for (the roofs' rows name their machine)
        rows = rows.append_column("machine_key", pa.array([gpu] * rows.num_rows, pa.string()))
    sources = sorted(set(rows.column("source").to_pylist()))
    return rows, f"{', '.join(sources)} ({gpu})"
