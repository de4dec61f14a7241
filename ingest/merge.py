"""Join the halves of a split profile into one run, per kernel launch.

The NERSC method sometimes collects one program's counters in two profiler runs: time and DRAM bytes in one,
the SASS FLOP counters in another (the GENE fixtures: ``time-dram`` and ``time-flops``), because the instruction
counters slow the kernel down and inflate its cycles. :func:`merge` takes the readers' outputs of the halves (any
mix of ``.ncu-rep`` and ncu CSV) and returns one reader output whose kernels carry every metric of both.

- Launches are matched by launch order when both halves hold the same kernel names in the same order, else by
  (kernel name, occurrence of that name).
- A metric both halves hold (``sm__cycles_elapsed.avg`` in GENE) is taken from the half without SASS instruction
  counters (``*sass_thread_inst_executed*``): the other one ran instrumented. The superseded values are counted in
  the run's note.
- Duration, FLOPs, bytes and ceilings are derived again from the joined metrics with
  :func:`rooflake.ingest.derive.derive`, as for a single report.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from typing import Any

import pyarrow as pa

from rooflake.ingest.derive import derive
from rooflake.schema import CEILINGS, KERNELS, METRICS, InputError

INSTRUMENTED = "sass_thread_inst_executed"


def _instrumented(part: dict[str, Any]) -> bool:
    return any(INSTRUMENTED in n for n in part["metrics"].column("metric_name").to_pylist())


def match_launches(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> tuple[list[tuple[int, int]], str]:
    """Pairs of kernel positions (in ``a``, in ``b``) of the same launch, and how they were matched."""
    if [k["name"] for k in a] == [k["name"] for k in b]:
        return [(i, i) for i in range(len(a))], "launch order (the same kernel names in the same order)"
    seen: Counter[str] = Counter()
    key_b: dict[tuple[str, int], int] = {}
    for j, k in enumerate(b):
        key_b[(k["name"], seen[k["name"]])] = j
        seen[k["name"]] += 1
    seen.clear()
    pairs = []
    for i, k in enumerate(a):
        hit = key_b.get((k["name"], seen[k["name"]]))
        seen[k["name"]] += 1
        if hit is not None:
            pairs.append((i, hit))
    return pairs, "kernel name and occurrence"


def merge(
    parts: list[dict[str, Any]], labels: list[str], *, run_id: str, fp16: str = "ncu"
) -> dict[str, Any]:
    """One reader output (``{"kernels", "metrics", "ceilings": pa.Table, "run": dict}``) from the outputs
    ``parts`` of two halves of one program's profile, named ``labels`` (file names, for the note).

    Kernel rows are those of the uninstrumented half with duration, flops_*, bytes_*, provenance and flags derived
    again from the joined metrics (formulas: :mod:`rooflake.schema.catalog`). ``run["note"]`` says how launches
    were matched, how many were, and how many duplicate metrics were superseded. Raises :class:`InputError` for
    other than two parts or when no launch matches.
    """
    if len(parts) != 2:
        raise InputError(f"--merge joins the two halves of one profile; got {len(parts)} files")
    order = sorted(range(2), key=lambda i: _instrumented(parts[i]))  # the uninstrumented half first
    first, second = (parts[i] for i in order)
    ka, kb = first["kernels"].to_pylist(), second["kernels"].to_pylist()
    pairs, how = match_launches(ka, kb)
    if not pairs:
        raise InputError(
            f"{labels[0]} and {labels[1]}: no kernel launch of one matches a launch of the other"
        )
    ma, mb = _by_kernel(first["metrics"]), _by_kernel(second["metrics"])
    k: dict[str, list[Any]] = {f.name: [] for f in KERNELS}
    m: dict[str, list[Any]] = {f.name: [] for f in METRICS}
    c: dict[str, list[Any]] = {f.name: [] for f in CEILINGS}
    superseded = 0
    for new_id, (i, j) in enumerate(pairs):
        rows = {r["metric_name"]: r for r in mb.get(kb[j]["kernel_id"], [])}
        own = {r["metric_name"]: r for r in ma.get(ka[i]["kernel_id"], [])}
        superseded += len(rows.keys() & own.keys())
        rows.update(own)
        _add_kernel(k, m, c, ka[i], list(rows.values()), run_id, new_id, fp16)
    unmatched = len(ka) + len(kb) - 2 * len(pairs)
    note = (
        f"merged {labels[order[0]]} (time) with {labels[order[1]]}: {len(pairs)} launches matched by {how}"
        f"{f', {unmatched} unmatched left out' if unmatched else ''}; {superseded} metrics held by both taken "
        f"from the uninstrumented half"
    )
    kernels = pa.table(k, schema=KERNELS)
    derivation: dict[str, set[str]] = {}
    for prov in k["provenance"]:
        for qty, formula in prov:
            derivation.setdefault(qty, set()).add(formula)
    run = {
        **first["run"],
        "n_kernels": kernels.num_rows,
        "n_metrics": len(m["metric_name"]),
        "derivation": json.dumps({q: sorted(v) for q, v in sorted(derivation.items())}),
        "fp16_convention": fp16,
        "note": note,
    }
    return {
        "kernels": kernels,
        "metrics": pa.table(m, schema=METRICS),
        "ceilings": pa.table(c, schema=CEILINGS),
        "run": run,
    }


def _by_kernel(metrics: pa.Table) -> dict[int, list[dict[str, Any]]]:
    out: dict[int, list[dict[str, Any]]] = {}
    for r in metrics.to_pylist():
        out.setdefault(r["kernel_id"], []).append(r)
    return out


def _add_kernel(
    k: dict[str, list[Any]],
    m: dict[str, list[Any]],
    c: dict[str, list[Any]],
    kernel: dict[str, Any],
    metrics: list[dict[str, Any]],
    run_id: str,
    kernel_id: int,
    fp16: str,
) -> None:
    """Append one joined launch: its metrics, its kernel row with quantities derived again, its ceilings."""
    values = {r["metric_name"]: r["value_double"] for r in metrics if r["value_double"] is not None}
    cc_text = kernel.get("compute_capability")
    cc = float(cc_text) if cc_text else None
    d = derive(values, cc, fp16)
    # the cycles are the uninstrumented half's (they win over the instrumented half's): the flag derive() raises
    # for SASS counters beside sm__cycles_elapsed (one instrumented pass) does not hold for a joined launch
    flags = [f for f in d.flags if f != "duration_from_instrumented_cycles"]
    row = {
        **kernel,
        "run_id": run_id,
        "kernel_id": kernel_id,
        "duration_ns": d.duration_ns,
        **d.quantities,
        "provenance": list(d.provenance.items()),
        "flags": flags,
    }
    for key, col in k.items():
        col.append(row.get(key))
    for r in metrics:
        for key, col in m.items():
            col.append(run_id if key == "run_id" else kernel_id if key == "kernel_id" else r.get(key))
    clock = values.get("sm__cycles_elapsed.avg.per_second")
    mhz = "?" if clock is None or math.isnan(clock) else f"{clock / 1e6:.0f}MHz"
    for ce in d.ceilings:
        ceiling = {
            "run_id": run_id,
            "kernel_id": kernel_id,
            "machine_key": f"{kernel.get('gpu_name')}|{cc_text}|{mhz}",
            "ceiling": ce.ceiling,
            "kind": ce.kind,
            "value": ce.value,
            "unit": "byte/s" if ce.kind == "bandwidth" else "FLOP/s",
            "clock_hz": ce.clock_hz,
            "formula": ce.formula,
            "source": "ncu-report",
        }
        for key, col in c.items():
            col.append(ceiling.get(key))
