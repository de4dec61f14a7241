"""The roofline of a trace from the shapes it recorded (a torch.profiler trace with ``record_shapes``, an nsys trace
whose NVTX texts carry shapes): per recorded op, per NVTX layer, and the ops grouped by their arguments. The work is
modelled (table ``ops``: FLOPs and compulsory bytes by the rules of :mod:`rooflake.instrument.shapes`, each op of
a nested chain counted once), the time measured (the kernels launched under the op, or its CPU time), the roofs the
datasheet catalog's for the run's GPU (query ``op_roofline``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rooflake.queries import connect, fetch
from rooflake.schema import RooflineDataError, UsageError
from rooflake.views.display import Displayed
from rooflake.views.runs import run_info

GRAINS = ("op", "layer", "step")
PROVENANCE = (
    "time measured ({time}), FLOPs and bytes modelled from the recorded shapes (torch's formulas or rooflake's; "
    "bytes compulsory, drawn at DRAM), ceilings datasheet ({gpu})"
)


@dataclass(frozen=True)
class OpRoofline(Displayed):
    """The roofline of a trace run from its recorded shapes.

    - ``run_id``, ``run`` (its ``runs`` row), ``grain`` (``op`` | ``layer`` | ``step``: LLM serving steps), ``depth`` (NVTX depth of a layer).
    - ``points``: pyarrow Table, one row per op carrying its chain's work (or per layer), the columns of
      ``layer_roofline`` (step ``op_points``: duration_ns measured, flops and bytes_dram modelled, ai_dram,
      achieved/peak/attainable FLOP/s, bound, ...) plus ops, ops_without_flops, dtype, time_source.
    - ``ceilings``: pyarrow Table of the roofs (step ``op_roofs``: the datasheet's DRAM bandwidth and the compute
      roofs the ops are judged against).
    - ``provenance``: which numbers are measured and which modelled.
    """

    run_id: str
    run: dict[str, Any]
    grain: str
    depth: int
    points: Any
    ceilings: Any
    provenance: str
    matched: Any = None


def has_ops(con: Any, run_id: str) -> bool:
    """Whether run ``run_id`` (a full id) has recorded ops with modelled FLOPs (a trace with shapes), on cursor
    ``con`` (:func:`rooflake.queries.connect`)."""
    got = fetch(con, "run_op_count", {"run_id": run_id}, as_rows=True)
    return bool(got.rows[0][0])


def op_roofline(
    store: Any,
    run_id: str | None,
    *,
    grain: str = "op",
    depth: int = 1,
    level: str = "dram",
    launch_overhead_ns: float = 1000.0,
) -> OpRoofline:
    """The roofline of trace run ``run_id`` (a unique prefix; None: the latest run) per recorded op (``grain='op'``)
    or per NVTX layer at ``depth`` (``grain='layer'``) or per LLM serving step (``grain='step'``: step ``step_points``
    over query ``steps``), from the ops' modelled work and measured time (query
    ``op_roofline``; Williams et al. 2009 for attainable = min(P, AI·W); Wang et al., arXiv 2009.04598, for the
    time weighting of a layer). ``level``: the drawn memory level; a trace run's compulsory bytes stand at DRAM
    only (the datasheet has no L1/L2 roofs). Returns :class:`OpRoofline`. Raises :class:`UsageError` (bad grain, a
    level other than dram), :class:`RunNotFoundError`, :class:`RooflineDataError` (no op with FLOPs: a trace
    without shapes, or a run that is not a trace; the GPU not in the datasheet catalog)."""
    if grain not in GRAINS:
        raise UsageError(f"unknown grain {grain!r} (choose one of: {', '.join(GRAINS)})")
    if level != "dram":
        raise UsageError(
            f"level {level!r}: a trace's ops have modelled compulsory bytes and the datasheet's DRAM roof only: "
            "use --level dram"
        )
    run_id = store.resolve(run_id)
    con = connect(store)
    run = run_info(con, run_id)
    if not has_ops(con, run_id):
        raise RooflineDataError(
            f"run {run_id} ({run['source_path']}): no recorded op has FLOPs from its shapes (a torch.profiler "
            "trace recorded with record_shapes=True, or an nsys trace with --pytorch=autograd-shapes-nvtx, has them)"
        )
    points = _points(con, run_id, grain, depth, launch_overhead_ns)
    roofs = fetch(con, "op_roofs", {"run_id": run_id}, what=f"roofs of run {run_id}")
    if roofs.num_rows == 0:
        raise RooflineDataError(
            f"run {run_id}: its GPU ({run['gpu_name'] or 'unknown'}) is not in the datasheet catalog, so its ops "
            'have no roofs (`rl sql "select gpu from datasheet_gpus"` lists the GPUs it knows)'
        )
    if points.num_rows == 0 and grain == "step":
        raise RooflineDataError(
            f"run {run_id}: no serving step (vLLM execute_context_..., SGLang step[...], ATOM prefill[...]/decode[...] "
            "ranges) holds an op with FLOPs (`rl sql \"select * from steps('RUN')\"` lists its steps)"
        )
    if points.num_rows == 0:
        raise RooflineDataError(f"run {run_id}: no layer at depth {depth} holds an op with FLOPs")
    times = set(points.column("time_source").to_pylist())
    text = PROVENANCE.format(
        time=", ".join(sorted(t.removeprefix("measured: ") for t in times)), gpu=roofs["machine_key"][0]
    )
    return OpRoofline(run_id, run, grain, depth, points, roofs, text)


def _points(con: Any, run_id: str, grain: str, depth: int, launch_overhead_ns: float) -> Any:
    """The points of ``grain``: step ``op_points`` (op, layer) or ``step_points`` (serving steps, query ``steps``)."""
    if grain == "step":
        params = {"run_id": run_id, "launch_overhead_ns": launch_overhead_ns}
        return fetch(con, "step_points", params, what=f"serving steps of run {run_id}")
    params = {"run_id": run_id, "grain": grain, "depth": depth, "launch_overhead_ns": launch_overhead_ns}
    return fetch(con, "op_points", params, what=f"ops of run {run_id}")


def op_summary(store: Any, run_id: str | None, *, launch_overhead_ns: float = 1000.0) -> Any:
    """The ops of trace run ``run_id`` grouped by (op_name, input_dims, input_types), as TraceLens'
    ops_unique_args groups them (query ``op_summary``: calls, modelled FLOPs and bytes per call, the measured time
    statistics, achieved vs attainable FLOP/s). Returns a pyarrow Table. Raises :class:`RunNotFoundError`."""
    run_id = store.resolve(run_id)
    return fetch(connect(store), "op_summary", {"run_id": run_id, "launch_overhead_ns": launch_overhead_ns})
