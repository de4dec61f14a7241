"""The layer view of one run: GPU time, launches, FLOPs, bytes and AI per NVTX layer, with attribution coverage;
and the join of an Nsight Systems run with an Nsight Compute run of the same program that lends it counters."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rooflake.queries import check_regex, connect, fetch
from rooflake.schema import RooflineDataError, UsageError
from rooflake.views.display import Displayed
from rooflake.views.runs import run_info


@dataclass(frozen=True)
class RunMatch(Displayed):
    """An Nsight Systems run joined with an Nsight Compute run of the same program (query ``nsys_ncu_match``).

    - ``nsys_run``, ``ncu_run``: full run ids.
    - ``kernels``: every kernel of the nsys run with every column of ``kernels`` (flops_* and bytes_* from its ncu
      twin, FLOP and byte; NULL when unmatched), then ``ncu_kernel_id`` and ``match`` (path_name_occurrence |
      name_occurrence | name_mean | NULL).
    - ``summary``: match, launches, kernel_time_ns (ns), share_of_launches, share_of_kernel_time (step
      ``match_summary``).
    - ``unmatched_nsys``: name, launches, kernel_time_ns (ns): nsys kernels ncu never profiled.
    - ``unmatched_ncu``: kernel_id, name, nvtx_path: profiled kernels no nsys launch took.
    """

    nsys_run: str
    ncu_run: str
    kernels: Any
    summary: Any
    unmatched_nsys: Any
    unmatched_ncu: Any

    @property
    def store_kernels(self) -> Any:
        """``kernels`` with the columns of the store's ``kernels`` table only: rows that can stand in for it."""
        return self.kernels.drop_columns(["ncu_kernel_id", "match"])


@dataclass(frozen=True)
class Layers(Displayed):
    """The layers of one run at one NVTX depth.

    - ``run_id``: full run id.
    - ``table``: the layer_summary rows (run_id, device_id, depth, layer, kernels, launches, memops, gpu_time_ns,
      kernel_time_ns, share_of_gpu_time, nan_durations, flops_* and flops (FLOP), bytes_* (byte), ai_* (FLOP/byte),
      launches_with_counters, counted_time_ns (ns), flops_per_s (FLOP/s), counters_complete) of the layers kept.
    - ``coverage``: run_id, device_id, attribution, ops, gpu_time_ns (ns), share_of_ops, share_of_gpu_time: how
      the run's kernels and memops were attributed to NVTX ranges (step ``coverage_summary``; of ``device`` only,
      when given).
    - ``matched``: the :class:`RunMatch` whose ncu counters the nsys kernels took, or None.
    - ``estimates``: with ``with_run`` an ``rl estimate`` run (source_format torch-model), the
      ``estimate_vs_measured`` rows per layer (measured vs analytic FLOPs and modelled bytes, ratios, gaps); for a
      run without GPU kernels the :data:`RANGE_VERSUS` columns (layer, steps, calls, time_ns_measured (ns per step),
      flops_modelled (FLOP per step), bytes_modelled (compulsory byte per step), ai (FLOP/byte), flops_per_s
      (FLOP/s), ops, ops_without_flops); else None.
    - ``timed_by``: ``kernels`` (``table`` holds layer_summary rows), or ``ranges`` for a run without GPU kernels (a
      CPU run): ``table`` then holds the ``range_times`` rows at the depth (run_id, domain, layer, stack, name,
      depth, parent_layer, calls, unclosed, threads, inclusive_ns, exclusive_ns, mean_inclusive_ns (ns),
      share_of_top), by inclusive time, and ``coverage`` is empty.
    - ``collectives``: for a run with collective kernels (one rank of a distributed job), the ``collectives``
      rows (layer, collective, kernel, launches, time_ns (ns), dtype, group_size, bytes (byte per launch),
      algbw/busbw_bytes_per_s, roof_bytes_per_s (byte/s, one NVLink direction), fraction_of_roof, roof_reason);
      else None.
    """

    run_id: str
    table: Any
    coverage: Any
    matched: RunMatch | None
    estimates: Any = None
    timed_by: str = "kernels"
    collectives: Any = None


def layers(
    store: Any,
    run_id: str | None = None,
    depth: int = 1,
    match: str | None = None,
    device: int | None = None,
    with_run: str | None = None,
    *,
    domain: str | None = None,
) -> Layers:
    """The layer view of ``run_id`` (a unique prefix; None = the latest run) at NVTX ``depth`` (1 = outermost):
    layers whose name matches the regular expression ``match`` (a partial match), on CUDA ``device`` if given, of
    NVTX ``domain`` if given (None: every domain; with an estimate run, the domain of the run's annotated model).

    With ``with_run`` an estimate run (``rl estimate``), ``estimates`` compares each layer with the model. With
    ``with_run`` an ncu run of the same program, the trace run's kernels (Nsight Systems or torch.profiler) take
    their FLOPs/bytes from it (:func:`match_runs`) and the layers' FLOPs, AI and FLOP/s follow (time stays the
    trace's); where the trace recorded ops with shapes, ``table`` also sets the counted FLOPs beside the modelled
    ones (:func:`with_modelled_work`: flops_ratio, gaps). ``run_id`` an ncu run and ``with_run`` a trace run: the
    same pair, the trace's layers. ``match`` and ``device`` keep the comparison's layers and measured kernels as
    they keep ``table``'s. Raises :class:`RunNotFoundError`,
    :class:`UsageError` (``with_run`` of the wrong kind; beside an estimate run, a run without GPU kernels that is
    not an Nsight Systems run; ``device`` for a run without GPU kernels), :class:`RooflineDataError` (beside an
    estimate run, a run without GPU kernels that has no layer at ``depth``: :func:`no_layers`),
    :class:`BadArgument` (``match`` is not a regular expression DuckDB accepts).

    A run without GPU kernels (a CPU run recorded by ``rl profile --nsys`` of a model wrapped in
    :func:`rooflake.instrument.annotate`) has its layers timed by its NVTX ranges: ``timed_by`` is ``ranges`` and
    ``table`` the ``range_times`` rows at ``depth`` (inclusive and exclusive CPU time per range path).
    """
    run_id = store.resolve(run_id)
    con = connect(store)
    check_regex(con, match, "--match")
    cpu = fetch(con, "run_kernel_count", {"run_id": run_id}).column("kernels")[0].as_py() == 0
    if cpu and device is not None:  # (it was ignored: every layer printed, as if on that device)
        raise UsageError(
            f"run {run_id} has no GPU kernels (its layers are timed by NVTX ranges on the CPU): --device does not "
            "apply"
        )
    if with_run is not None:
        with_run = store.resolve(with_run)
        kinds = (run_info(con, run_id)["source_format"], run_info(con, with_run)["source_format"])
        if kinds[1] == "torch-model":
            return _versus_estimates(con, run_id, with_run, depth, (match, device, domain), cpu)
        if kinds[0] == "ncu-rep" and is_trace(kinds[1]):  # `rl layers NCU --with TRACE`: the same pair
            return layers(store, with_run, depth, match, device, run_id, domain=domain)
    if cpu and with_run is None:
        return _range_layers(con, run_id, depth, match, domain)
    matched = match_runs(store, run_id, with_run) if with_run is not None else None
    params = {"run_id": run_id, "depth": depth, "match": match, "device": device, "domain": domain}
    shadow = {"kernels": matched.store_kernels} if matched else None
    table = fetch(con, "run_layers", params, tables=shadow, what=f"layers of run {run_id}")
    table = with_modelled_work(con, run_id, depth, table, "kernel_time_ns")
    coverage = fetch(con, "coverage_summary", {"run_id": run_id})
    if device is not None:  # (the layers are of that device: so is their coverage)
        import pyarrow.compute as pc

        coverage = coverage.filter(pc.equal(coverage["device_id"], device))
    return Layers(run_id, table, coverage, matched, collectives=_collectives(con, run_id))


def _collectives(con: Any, run_id: str) -> Any:
    """The ``collectives`` rows of run ``run_id``, or None for a run with none (a single-GPU run)."""
    collectives = fetch(con, "collectives", {"run_id": run_id}, what=f"collectives of run {run_id}")
    return collectives if collectives.num_rows else None


def _range_layers(con: Any, run_id: str, depth: int, match: str | None, domain: str | None) -> Layers:
    """The layers of run ``run_id`` without GPU kernels, timed by its NVTX ranges (``timed_by`` ``ranges``:
    ``run_range_layers`` rows, with the modelled work of a trace's recorded ops)."""
    table = fetch(
        con, "run_range_layers", {"run_id": run_id, "depth": depth, "match": match, "domain": domain}
    )
    table = with_modelled_work(con, run_id, depth, table, "inclusive_ns")
    coverage = fetch(con, "coverage_summary", {"run_id": run_id})
    return Layers(run_id, table, coverage, None, timed_by="ranges")


#: the columns :func:`with_modelled_work` appends to a trace run's layers
MODELLED = ["flops_modelled", "bytes_modelled", "ai_modelled", "flops_per_s_modelled", "ops_without_flops"]
#: and, where the layers also have counted FLOPs (an ncu run of the same program), the cross-check
VERSUS_COUNTERS = ["flops_ratio", "gaps"]


def with_modelled_work(con: Any, run_id: str, depth: int, table: Any, time_column: str) -> Any:
    """``table`` (layer rows with a ``layer`` column) with the modelled work of the run's recorded ops per layer
    (steps ``op_layers`` and ``layer_modelled_work``: :data:`MODELLED` columns flops_modelled (FLOP),
    bytes_modelled (byte), ai_modelled (FLOP/byte), flops_per_s_modelled (FLOP/s = flops_modelled / the layer's
    ``time_column``, measured, ns), ops_without_flops), where the run has recorded ops with shapes (a trace); else
    ``table`` as it is. Where ``table``'s ``flops`` are counted on some layer (ncu counters matched to the trace's
    kernels), also :data:`VERSUS_COUNTERS`: flops_ratio (counted / modelled, on layers whose every launch has
    counters) and gaps (the likely cause of a gap over 10 %, macro ``flops_gap``)."""
    import pyarrow as pa

    from rooflake.views.ops import has_ops

    if table.num_rows == 0 or not has_ops(con, run_id):
        return table
    counted = "flops" in table.column_names and table.column("flops").null_count < table.num_rows
    nulls = pa.nulls(table.num_rows)
    rows = pa.table({
        "position": pa.array(range(table.num_rows), pa.int64()),
        "layer": table.column("layer"),
        "time_ns": table.column(time_column).cast(pa.float64()),
        "flops": table.column("flops").cast(pa.float64()) if counted else nulls.cast(pa.float64()),
        "counters_complete": table.column("counters_complete") if counted else nulls.cast(pa.bool_()),
    })  # fmt: skip
    given = {"layer_rows": rows, "op_layer_rows": fetch(con, "op_layers", {"run_id": run_id, "depth": depth})}
    work = fetch(con, "layer_modelled_work", tables=given, what=f"modelled work per layer of run {run_id}")
    for name in [*MODELLED, *(VERSUS_COUNTERS if counted else [])]:
        table = table.append_column(name, work.column(name))
    return table


#: the columns of a range-timed run's layers beside an estimate run (estimate_layer_roofline's, renamed)
RANGE_VERSUS = {
    "name": "layer",
    "steps": "steps",
    "calls": "calls",
    "duration_ns": "time_ns_measured",
    "flops": "flops_modelled",
    "bytes_compulsory": "bytes_modelled",
    "ai_dram": "ai",
    "achieved_flops_per_s": "flops_per_s",
    "ops": "ops",
    "ops_without_flops": "ops_without_flops",
}


def _versus_estimates(
    con: Any,
    run_id: str,
    estimate_run: str,
    depth: int,
    keep: tuple[str | None, int | None, str | None],
    cpu: bool,
) -> Layers:
    """The layers of ``run_id`` beside estimate run ``estimate_run``, ``keep`` = (match, device, domain):
    ``estimate_vs_measured`` for a run with kernels (in NVTX ``domain``, else the domain of its forward/backward
    ranges where there is one, step ``run_model_domains``); for a run without (``cpu``), step
    ``estimate_layer_roofline`` with no roofs (in ``domain``, else the domain the estimates match best), columns
    :data:`RANGE_VERSUS` (time per step measured, FLOPs and compulsory bytes per step modelled, AI = FLOPs / bytes,
    FLOP/s = FLOPs / time)."""
    import pyarrow as pa

    what = f"run {run_id} against estimate {estimate_run}"
    coverage = fetch(con, "coverage_summary", {"run_id": run_id})
    match, device, domain = keep
    if not cpu:
        params = {"run_id": run_id, "estimates_run_id": estimate_run, "depth": depth}
        domains = fetch(con, "run_model_domains", {"run_id": run_id}).column("domain").to_pylist()
        if domain is not None or len(domains) == 1:  # the domain asked, or the one annotated model's
            params["domain"] = domain if domain is not None else domains[0]
        versus = fetch(con, "estimate_vs_measured", params | {"match": match, "device": device}, what=what)
        keep_params = {"match": match, "device": device, "domain": domain}
        table = fetch(con, "run_layers", {"run_id": run_id, "depth": depth, **keep_params})
        return Layers(run_id, table, coverage, None, versus)
    run = run_info(con, run_id)
    if not str(run["source_format"]).startswith("nsys"):
        raise UsageError(
            f"run {run_id} is a {run['source_format']} run without GPU kernels: its time per layer beside an "
            "estimate run comes from the NVTX ranges of an Nsight Systems run (rl profile --nsys)"
        )
    no_roofs = pa.table({"ceiling": pa.array([], pa.string()), "kind": pa.array([], pa.string()),
                         "value": pa.array([], pa.float64()), "source": pa.array([], pa.string())})  # fmt: skip
    params = {"run_id": run_id, "estimates_run_id": estimate_run, "depth": depth, "level": "dram"}
    params |= {"timed_by": "ranges", "domain": domain}
    tables = {"layer_roofs": no_roofs}
    points = fetch(con, "estimate_layer_roofline", params | {"match": match}, tables=tables, what=what)
    if (
        points.num_rows == 0
        and (  # (none of --domain or matching --match: no rows, as without an estimate run)
            (match is None and domain is None)
            or fetch(
                con, "estimate_layer_roofline", params | {"domain": None}, tables=tables, what=what
            ).num_rows
            == 0
        )
    ):
        raise no_layers(run_id, depth)
    versus = points.select(list(RANGE_VERSUS)).rename_columns(list(RANGE_VERSUS.values()))
    table = fetch(
        con, "run_range_layers", {"run_id": run_id, "depth": depth, "match": match, "domain": domain}
    )
    return Layers(run_id, table, coverage, None, versus, timed_by="ranges")


def no_layers(run_id: str, depth: int) -> RooflineDataError:
    """The error of a run with no layer at NVTX ``depth`` to set beside an estimate run (no push/pop range at that
    depth under a ``forward`` or ``backward`` range: the model was not wrapped in ``annotate()``, or the depth is
    past its module tree)."""
    return RooflineDataError(
        f"run {run_id}: no NVTX range at depth {depth} under a `forward` or `backward` range (the ranges "
        "rooflake.instrument.annotate pushes): wrap the model in annotate() and profile it with rl profile --nsys"
    )


def estimate_roofs_text(points: Any) -> str:
    """The compute roofs the layers of an estimate roofline were judged against (step ``estimate_layer_roofline``'s
    ``peak_ceiling``, ``dtype`` and ``peak_reason`` columns), in words for a caption: ``"compute roof TENSOR BF16
    (bfloat16, modelled dtype)"``; a layer whose roof is missing adds its reason (its attainable is NULL)."""
    used: dict[str, set[str]] = {}
    missing: dict[str, int] = {}
    for r in points.select(["peak_ceiling", "dtype", "peak_reason"]).to_pylist():
        if r["peak_ceiling"] is not None:
            used.setdefault(r["peak_ceiling"], set()).add(r["dtype"] or "no dtype")
        else:
            missing[r["peak_reason"]] = missing.get(r["peak_reason"], 0) + 1
    parts = [f"{c} ({', '.join(sorted(d))}, modelled dtype)" for c, d in sorted(used.items())]
    text = f"compute roof {'; '.join(parts)}" if parts else "no compute roof"
    for reason, n in sorted(missing.items(), key=lambda kv: str(kv[0])):
        text += f"; {n} layer{'s' if n > 1 else ''} without attainable: {reason}"
    return text


def is_trace(source_format: str) -> bool:
    """Whether runs of ``source_format`` are traces of a whole program (Nsight Systems, torch.profiler): kernel
    times as they really ran, no hardware counters."""
    return source_format.startswith("nsys") or source_format == "torch-trace"


def match_runs(store: Any, nsys_run: str, ncu_run: str) -> RunMatch:
    """Join trace run ``nsys_run`` (Nsight Systems or torch.profiler: :func:`is_trace`) with Nsight Compute run
    ``ncu_run`` of the same program (query ``nsys_ncu_match``: by NVTX path, name and occurrence, then name and
    occurrence, then the mean per launch of the name). Run ids may be prefixes. Raises :class:`RunNotFoundError`,
    :class:`UsageError` (a run of the wrong kind), :class:`QueryError`."""
    nsys_run, ncu_run = store.resolve(nsys_run), store.resolve(ncu_run)
    con = connect(store)
    formats = {
        r["run_id"]: r["source_format"]
        for r in fetch(con, "run_formats", {"run_ids": [nsys_run, ncu_run]}).to_pylist()
    }
    if not is_trace(formats[nsys_run]):
        raise UsageError(
            f"run {nsys_run} is a {formats[nsys_run]} run: the layer run must be a trace (Nsight Systems or "
            "torch.profiler)"
        )
    if formats[ncu_run] != "ncu-rep":
        raise UsageError(
            f"run {ncu_run} (--with) is a {formats[ncu_run]} run: it must be an Nsight Compute run of the same "
            "program"
        )
    what = f"matching runs {nsys_run} and {ncu_run}"
    kernels = fetch(con, "nsys_ncu_match", {"nsys_run": nsys_run, "ncu_run": ncu_run}, what=what)
    given = {"matched": kernels}
    return RunMatch(
        nsys_run,
        ncu_run,
        kernels,
        summary=fetch(con, "match_summary", tables=given, what=what),
        unmatched_nsys=fetch(con, "unmatched_nsys", tables=given, what=what),
        unmatched_ncu=fetch(con, "unmatched_ncu", {"ncu_run": ncu_run}, tables=given, what=what),
    )
