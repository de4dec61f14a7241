"""What-if (DeLTA's use of a performance model, Lym et al., ISPASS 2019): scale the machine's ceilings, recompute
each kernel's T_min of the time-based roofline, keep its measured inefficiency s = T / T_min, and sum per layer and
run. The layers that stop improving show where the next bottleneck is."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from rooflake.queries import connect, fetch
from rooflake.schema import BadArgument, RooflineDataError, UsageError
from rooflake.views.ceilings import run_roofs
from rooflake.views.display import Displayed
from rooflake.views.time_roofline import LaunchOverhead, launch_overhead

#: what ``--scale KEY=FACTOR`` may scale: each pipe's peak, each level's bandwidth, and the launch overhead
#: (``launch=2``: t_o halves). ``compute`` scales every pipe at once.
SCALES = ("fp64", "fp32", "fp16", "tensor", "l1", "l2", "dram", "launch")


@dataclass(frozen=True)
class WhatIf(Displayed):
    """The what-if of one run under scaled ceilings.

    - ``run_id``; ``scales``: every key of :data:`SCALES` with its factor (1 = unchanged); ``depth``: NVTX depth
      of a layer; ``launch_overhead``: the t_o used (:class:`LaunchOverhead`).
    - ``rows``: the ``whatif`` query's rows (queries/whatif.sql: run_id, grain kernel | layer | run, kernel_id,
      layer, name, n_kernels, duration_ns, t_min_ns (ns), inefficiency, bound, t_min_scaled_ns (ns), bound_scaled,
      predicted_ns (ns), speedup, share_of_predicted, modelled, bound_ceiling and bound_scaled_ceiling (kernels: the
      ceiling behind each bound, as the roofs' rows name it, e.g. 'TENSOR FP16→FP32' or 'DRAM'), ceilings_source
      (every row: the roofs the T_min terms are computed against: ncu-report | measured | ert | ert-spec |
      datasheet; NULL when the machine has none) and ceilings_machine (their machine_key: 'NVIDIA H100
      PCIe|9.0|1095MHz' for the report's peaks at the profiled clock, 'H100 PCIe' for the datasheet's)),
      unknown_terms (the T_min terms without a counter or roof) and untimed (launches without a duration, left out
      of the sums).
    - ``total``: the run row as a dict; ``layers``/``kernels``: their rows (Arrow), largest predicted time first.
    - ``ceilings``: the rows of the roofs scaled (:func:`rooflake.views.ceilings.run_roofs`: run_ceilings' columns
      plus source_label and overlay); ``choice``: the source asked for (default | report | datasheet | ert |
      measured).
    Predicted times are modelled; ``modelled`` is false for kernels without a known T_min or compute term (a missing
    roof or FLOP counter: they keep their time).
    """

    run_id: str
    scales: dict[str, float]
    depth: int
    launch_overhead: LaunchOverhead
    rows: Any
    total: dict[str, Any]
    layers: Any
    kernels: Any
    ceilings: Any = None
    choice: str = "default"


def parse_scales(items: list[str]) -> dict[str, float]:
    """``["dram=2", "tensor=1.5"]`` -> every key of :data:`SCALES` with its factor (``compute=F`` sets every pipe).
    Raises :class:`BadArgument` for an unknown key, a factor that is not a finite number > 0, or a key given twice."""
    out = dict.fromkeys(SCALES, 1.0)
    seen: set[str] = set()
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip().lower()
        keys = ["fp64", "fp32", "fp16", "tensor"] if key == "compute" else [key]
        if not sep or any(k not in SCALES for k in keys):
            raise BadArgument(
                f"--scale {item!r}: expected KEY=FACTOR with KEY one of {', '.join(SCALES)}, compute"
            )
        try:
            factor = float(value)
        except ValueError:
            factor = math.nan
        if not (math.isfinite(factor) and factor > 0):
            raise BadArgument(f"--scale {item!r}: the factor must be a number > 0")
        if seen & set(keys):
            raise BadArgument(f"--scale {item!r}: {key} is scaled twice")
        seen |= set(keys)
        out |= dict.fromkeys(keys, factor)
    return out


def roofs_machine(rows: Any) -> str | None:
    """The ``machine_key`` of the roofs a view is against: of the rows of :func:`rooflake.views.ceilings.run_roofs`
    (an Arrow table) that are no overlay; several distinct keys joined with ``, `` in their order; None without
    any row."""
    keys, overlay = rows.column("machine_key").to_pylist(), rows.column("overlay").to_pylist()
    return ", ".join(dict.fromkeys(k for k, o in zip(keys, overlay, strict=True) if k and not o)) or None


def whatif(
    store: Any,
    run_id: str | None,
    scales: dict[str, float],
    *,
    depth: int = 1,
    launch_overhead_ns: float | None = None,
    ceilings: str = "default",
) -> WhatIf:
    """Predicted times of ``run_id`` (a unique prefix; None = the latest run) under ``scales`` (from
    :func:`parse_scales`), per kernel, per NVTX layer at ``depth`` and for the run. t_o as
    :func:`rooflake.views.time_roofline.launch_overhead` chooses it. ``ceilings`` (default | report | datasheet |
    ert | measured): the source of the roofs scaled, as :func:`rooflake.views.time_roofline.time_roofline` takes it
    (:func:`rooflake.views.ceilings.run_roofs`: the kernels' T_min, s and the predictions are against that source's
    roofs, and every row names them: ``ceilings_source``, ``ceilings_machine``, ``bound_ceiling``; ``all`` overlays
    sources on a chart and predicts nothing more, so it is refused). Returns :class:`WhatIf`. Raises
    :class:`RunNotFoundError`, :class:`UsageError` (bad t_o, depth or ``ceilings``), :class:`RooflineDataError` (the
    source has no ceiling of the run's machine, or the run no kernel), :class:`QueryError`."""
    if depth < 1:
        raise UsageError(f"depth must be ≥ 1, got {depth}")
    if ceilings == "all":
        raise UsageError(
            "ceilings 'all' draws other sources' roofs beside the default one; a what-if scales one source: choose "
            "report, datasheet, ert or measured"
        )
    run_id = store.resolve(run_id)
    overhead = launch_overhead(store, run_id, launch_overhead_ns)
    roofs = run_roofs(store, run_id, ceilings)
    params: dict[str, Any] = {"run_id": run_id, "launch_overhead_ns": overhead.value_ns, "depth": depth}
    params |= {"ceilings_source": roofs.source, "ceilings_machine": roofs_machine(roofs.rows)}
    params |= {f"scale_{k}": float(v) for k, v in scales.items()}
    import pyarrow as pa

    rows = fetch(connect(store), "whatif", params, tables=roofs.tables, what=f"what-if of run {run_id}")
    grain = rows.column("grain").to_pylist()
    total: dict[str, Any] = next((r for r, g in zip(rows.to_pylist(), grain, strict=True) if g == "run"), {})
    # (typed positions: an empty Python list is an Arrow null array, which take refuses)
    pick = lambda g: rows.take(pa.array([i for i, x in enumerate(grain) if x == g], pa.int64()))  # noqa: E731
    kernels = pick("kernel")
    if not kernels.num_rows:
        raise RooflineDataError(
            f"run {run_id} has no GPU kernels: a what-if scales kernel times (an nsys export without CUDA trace, an "
            "ERT or estimate run has none)"
        )
    return WhatIf(
        run_id, dict(scales), depth, overhead, rows, total, pick("layer"), kernels, roofs.rows, ceilings
    )
