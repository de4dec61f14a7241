"""Roofline quantities of one kernel from its raw ncu metric values.

Formulas and metric names: :mod:`rooflake.schema.catalog` (NERSC method and ncu's SpeedOfLight roofline sections).
A quantity the metrics cannot support is ``None`` (stored as NULL) with the reason in ``provenance``; a NaN in the
report propagates as NaN and is flagged, never replaced.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from rooflake.schema import catalog as cat


@dataclass
class Ceiling:
    """One roof of one kernel: ``value`` in byte/s (bandwidth) or FLOP/s (compute) at ``clock_hz``."""

    ceiling: str
    kind: str
    value: float
    clock_hz: float
    formula: str


@dataclass
class Derived:
    """Derived quantities of one kernel.

    ``duration_ns`` (ns), ``quantities`` (FLOP or byte per :data:`catalog.QUANTITIES`, None when unsupported),
    ``provenance`` (quantity -> formula or ``NULL: reason``), ``ceilings`` and ``flags``.
    """

    duration_ns: float | None
    quantities: dict[str, float | None]
    provenance: dict[str, str]
    ceilings: list[Ceiling] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)


def _duration(v: Mapping[str, float]) -> tuple[float | None, str]:
    if cat.DURATION_METRIC in v:
        return v[cat.DURATION_METRIC], cat.DURATION_METRIC
    cyc, rate = cat.NERSC_TIME
    if cyc in v and rate in v and v[rate] != 0:
        return v[cyc] / v[rate] * 1e9, f"{cyc} / {rate} * 1e9"
    return None, f"NULL: neither {cat.DURATION_METRIC} nor {cyc} and {rate} in the report"


def _inst_count(v: Mapping[str, float], base: str, t_s: float | None) -> tuple[float | None, str]:
    """Instruction count of ``base`` (no unit prefix): exact counter first, then rate x clock x time."""
    for unit in ("smsp", "sm"):
        name = f"{unit}__{base}.sum"
        if name in v:
            return v[name], name
    for unit in ("smsp", "sm"):
        rate, clock = f"{unit}__{base}.sum.per_cycle_elapsed", f"{unit}__cycles_elapsed.avg.per_second"
        if rate in v and clock in v and t_s is not None:
            return v[rate] * v[clock] * t_s, f"{rate} * {clock} * duration"
        cycles = f"{unit}__cycles_elapsed.avg"
        if rate in v and cycles in v:
            return v[rate] * v[cycles], f"{rate} * {cycles}"
    return None, f"smsp__{base}.sum"


def _flops(v: Mapping[str, float], qty: str, fp16: str, t_s: float | None) -> tuple[float | None, str]:
    ops = cat.FLOP_OPS[qty][fp16 if qty == "flops_fp16" else "ncu"]
    total = 0.0
    terms = []
    for op, factor in ops.items():
        count, how = _inst_count(v, cat.INST_BASE.format(op=op), t_s)
        if count is None:
            return None, f"NULL: missing {how} (or its .per_cycle_elapsed rate)"
        total += factor * count
        terms.append(f"{factor}*{how}" if factor != 1 else how)
    return total, " + ".join(terms)


_SM_CLOCK = "sm__cycles_elapsed.avg.per_second"


def _tensor_paths(
    v: Mapping[str, float], t_s: float | None
) -> tuple[dict[cat.TensorPath, tuple[float, str]], str]:
    """Op count and formula of every ``sm__ops_path_tensor_*`` path the report counts (``.sum``, else the rate x
    clock x duration), and why a path with only a rate could not be counted ('' if none)."""
    bases = {n.split(".", 1)[0] for n in v if n.startswith(cat.TENSOR_PATH_PREFIX)}
    out: dict[cat.TensorPath, tuple[float, str]] = {}
    why = ""
    for base in sorted(bases):
        path = cat.TensorPath.parse(base)
        if path is None:
            continue
        rate = f"{base}.sum.per_cycle_elapsed"
        if f"{base}.sum" in v:
            out[path] = (v[f"{base}.sum"], f"{base}.sum")
        elif rate in v and _SM_CLOCK in v and t_s is not None:
            out[path] = (v[rate] * v[_SM_CLOCK] * t_s, f"{rate} * {_SM_CLOCK} * duration")
        elif rate in v:
            why = f"NULL: {rate} without {_SM_CLOCK} or duration"
    return out, why


def _tensor_roof(ops: dict[cat.TensorPath, float]) -> cat.TensorPath | None:
    """THE tensor-roof rule (docs/architecture.md section 5): the path that carries the kernel's tensor ops, the one with the
    most when several do, among the finest paths the report counts (those covering no other: Hopper's hgmma/hmma
    splits, not their aggregate, whose peak is the sparse one), else among the aggregates; ties go to the dense
    path. Its roof is the peak ncu's SpeedOfLight_HierarchicalTensorRooflineChart pairs with it: the dense peak
    for dense (sparsity_off, or unsplit) ops. None when no path counts an op (ncu draws no tensor roof then)."""
    leaves = [p for p in ops if not any(p.covers(o) for o in ops)]
    roots = [p for p in ops if not any(o.covers(p) for o in ops)]
    for group in (leaves, roots):
        live = [p for p in group if ops[p] > 0]  # NaN (failed replay) is not > 0
        if live:
            return max(live, key=lambda p: (ops[p], p.sparsity != "on", p.base))
    return None


def _tensor_ceiling(v: Mapping[str, float], name: str, peak: str, factor: int = 1) -> Ceiling | None:
    if peak not in v or _SM_CLOCK not in v:
        return None
    f = f"{factor} * " if factor != 1 else ""
    return Ceiling(name, "compute", v[peak] * factor * v[_SM_CLOCK], v[_SM_CLOCK], f"{f}{peak} * {_SM_CLOCK}")


def _tensor(
    v: Mapping[str, float], t_s: float | None, cc: float | None
) -> tuple[float | None, str, list[Ceiling], str]:
    """Tensor ops, their formula, the Tensor-Core ceilings and the kernel's tensor roof (a ceiling name, or
    'NULL: <reason>'). Ops: the sum over the coarsest paths the report counts (an aggregate and the op_* paths
    that split it are never added together); ceilings: each finest path's peak, named by its source type."""
    paths, why = _tensor_paths(v, t_s)
    if not paths:
        return _tensor_pipe(v, t_s, cc, why)
    roots = [p for p in paths if not any(o.covers(p) for o in paths)]
    total = sum(paths[p][0] for p in roots)
    how = " + ".join(paths[p][1] for p in sorted(roots, key=lambda p: p.base))
    leaves = [p for p in paths if not any(p.covers(o) for o in paths)]
    roof = _tensor_roof({p: c for p, (c, _) in paths.items()})
    ceilings = [
        c
        for p in sorted({*leaves, *([roof] if roof else [])}, key=lambda p: p.base)
        if (c := _tensor_ceiling(v, p.roof, f"{p.base}.sum.peak_sustained")) is not None
    ]
    if roof is None:
        return total, how, ceilings, "NULL: no Tensor-Core op counted"
    if roof.roof not in {c.ceiling for c in ceilings}:
        return total, how, ceilings, f"NULL: {roof.base}.sum.peak_sustained or {_SM_CLOCK} not in the report"
    return total, how, ceilings, roof.roof


def _tensor_pipe(
    v: Mapping[str, float], t_s: float | None, cc: float | None, why: str
) -> tuple[float | None, str, list[Ceiling], str]:
    """Volta: 512 ops per tensor-pipe instruction (ncu's pre-2023.2 Tensor roofline section)."""
    count, how = _inst_count(v, cat.TENSOR_PIPE_BASE, t_s)
    if count is None:
        reason = why or (
            f"NULL: missing the Tensor-Core op counts {cat.TENSOR_PATH_PREFIX}*.sum and {how} (or their "
            f".per_cycle_elapsed rates); {cat.TENSOR_HINT}"
        )
        return None, reason, [], reason
    lo, hi = cat.TENSOR_PIPE_CC
    if cc is None or not lo <= cc < hi:
        # later GPUs do 2-8x more per HMMA, so a count from it would be silently low
        reason = (
            f"NULL: only {how} counted, and {cat.TENSOR_PIPE_FACTOR} ops per tensor instruction holds on Volta "
            f"(CC 7.0) only, not on CC {cc}; {cat.TENSOR_HINT}"
        )
        return None, reason, [], reason
    peak = f"sm__{cat.TENSOR_PIPE_BASE}.sum.peak_sustained"
    ceiling = _tensor_ceiling(v, cat.TENSOR_PIPE_ROOF, peak, cat.TENSOR_PIPE_FACTOR)
    count *= cat.TENSOR_PIPE_FACTOR
    how = f"{cat.TENSOR_PIPE_FACTOR}*{how}"
    if ceiling is None:
        return count, how, [], f"NULL: {peak} or {_SM_CLOCK} not in the report"
    return count, how, [ceiling], cat.TENSOR_PIPE_ROOF if count > 0 else "NULL: no Tensor-Core op counted"


def _bytes(
    v: Mapping[str, float],
    qty: str,
    cc: float | None,
    t_s: float | None,
    section: frozenset[str] = frozenset(),
) -> tuple[float | None, str, cat.ByteFamily | None]:
    fams = cat.BYTE_FAMILIES[qty]
    # the report's own roofline section's choice, then ncu's choice for this architecture, then NERSC's. Never
    # another architecture's counter: on Hopper l1tex__m_xbar2l1tex_read_bytes reads 0 for kernels that move data
    # (seen on the H800 fixture).
    own = [f for f in fams if f.section_re and any(re.search(f.section_re, n) for n in section)]
    ordered = own + [f for f in fams if f.applies(cc) and f not in own]
    ordered += [f for f in fams if f.method == "nersc" and f not in ordered]
    for fam in ordered:
        f = "" if fam.factor == 1 else f"{fam.factor:g}*"
        if f"{fam.base}.sum" in v:
            return v[f"{fam.base}.sum"] * fam.factor, f"{f}{fam.base}.sum", fam
        if fam.split and all(n in v for n in fam.split):
            terms = " + ".join(fam.split)
            return sum(v[n] for n in fam.split) * fam.factor, f"{f}({terms})" if f else terms, fam
        rate = f"{fam.base}.sum.per_second"
        if rate in v and t_s is not None:
            return v[rate] * fam.factor * t_s, f"{f}{rate} * duration", fam
    wanted = [f.base for f in ordered]
    return (
        None,
        f"NULL: none of {', '.join(w + '.sum' for w in wanted)} (or .sum.per_second) in the report",
        None,
    )


def _byte_ceiling(v: Mapping[str, float], level: str, fam: cat.ByteFamily) -> Ceiling | None:
    peak, clock = f"{fam.base}.sum.peak_sustained", f"{fam.clock_unit}__cycles_elapsed.avg.per_second"
    if peak in v and clock in v:
        f = "" if fam.factor == 1 else f"{fam.factor:g} * "
        return Ceiling(level, "bandwidth", v[peak] * fam.factor * v[clock], v[clock], f"{f}{peak} * {clock}")
    return None


def _flop_ceilings(v: Mapping[str, float], fp16: str) -> list[Ceiling]:
    """FP64/FP32/FP16 roofs: the FMA instruction's peak x its FLOP factor x the SM clock."""
    out = []
    for qty, (name, fma) in cat.FLOP_CEILINGS.items():
        factor = cat.FLOP_OPS[qty][fp16 if qty == "flops_fp16" else "ncu"][fma]
        peak = f"sm__{cat.INST_BASE.format(op=fma)}.sum.peak_sustained"
        if peak in v and _SM_CLOCK in v:
            formula = f"{factor} * {peak} * {_SM_CLOCK}"
            out.append(Ceiling(name, "compute", v[peak] * factor * v[_SM_CLOCK], v[_SM_CLOCK], formula))
    return out


def _flags(v: Mapping[str, float], dur: float | None, dur_how: str, d: Derived) -> list[str]:
    q = d.quantities
    flags: list[str] = []
    if dur is not None and math.isnan(dur):
        flags.append("nan_duration")
    if dur is None:
        flags.append("no_duration")
    if dur_how.startswith(cat.NERSC_TIME[0]) and any("sass_thread_inst_executed" in n for n in v):
        # the time comes from sm__cycles_elapsed of a pass that also ran SASS instruction counters (the FLOP half
        # of a NERSC split run): instrumented, far longer than the kernel (GENE: 140 ms vs 0.92 ms)
        flags.append("duration_from_instrumented_cycles")
    if any(isinstance(x, float) and math.isnan(x) for x in v.values()):
        flags.append("nan_metrics")
    if any(c.value == 0 or math.isnan(c.value) for c in d.ceilings):
        flags.append("zero_peak")
    if all(q[k] is None for k in ("flops_fp64", "flops_fp32", "flops_fp16", "flops_tensor")):
        flags.append("no_flop_counters")
    if all(q[k] is None for k in ("bytes_l1", "bytes_l2", "bytes_dram")):
        flags.append("no_byte_counters")
    # hierarchy check (Yang et al.): bytes_L1 >= bytes_L2 >= bytes_DRAM, i.e. AI_L1 <= AI_L2 <= AI_DRAM. ncu's L2
    # counter (L2 -> SM traffic) leaves out writes, so streaming kernels can break it: flag, never correct.
    b1, b2, bd = q["bytes_l1"], q["bytes_l2"], q["bytes_dram"]
    if (b1 is not None and b2 is not None and b1 < b2) or (b2 is not None and bd is not None and b2 < bd):
        flags.append("ai_order_violated")
    return flags


# kernels that should execute FLOPs (GEMMs, convolutions, attention): F = 0 on them is a physics flag (docs/architecture.md
# section 5); the one definition both ncu readers use (ncu_rep on the demangled name, ncu_csv on "Kernel Name")
GEMM_RE = re.compile(r"gemm|conv|matmul|mma|fmha|flash", re.IGNORECASE)
FLOP_QUANTITIES = ("flops_fp64", "flops_fp32", "flops_fp16", "flops_tensor")


def flag_gemm_without_flops(d: Derived, name: str) -> None:
    """Add the flag ``gemm_without_flops`` to ``d.flags`` when kernel ``name`` matches :data:`GEMM_RE` and every
    FLOP quantity the report counts is 0 (at least one counted: missing counters are not zero FLOPs). The physics
    check of docs/architecture.md section 5 ("F = 0 on a GEMM-named kernel"); flagged, never corrected."""
    flops = [d.quantities[q] for q in FLOP_QUANTITIES]
    if GEMM_RE.search(name) and any(f is not None for f in flops) and not any(f for f in flops):
        d.flags.append("gemm_without_flops")


def derive(
    values: Mapping[str, float], cc: float | None, fp16: str = "ncu", section: frozenset[str] = frozenset()
) -> Derived:
    """Derive duration, FLOPs per precision, bytes per level and the ceilings of one kernel.

    ``values``: numeric metric values by ncu metric name (base units as the report holds them: ns, byte,
    inst, inst/cycle, byte/s, Hz). ``cc``: compute capability as ``major + minor/10`` or None.
    Returns :class:`Derived`. FLOPs: add + mul + 2 fma (FP16 per ``fp16``: 'ncu' 2/2/4 or 'nersc' 1/1/2);
    Tensor: the ops of the coarsest ``sm__ops_path_tensor_*`` paths, else 512 x tensor-pipe instructions on Volta
    (:data:`catalog.TENSOR_PATH_RE`); ``provenance['tensor_roof']`` names the kernel's tensor roof among the
    ceilings (:func:`_tensor_roof`), or says why there is none. Bytes and ceilings:
    :data:`catalog.BYTE_FAMILIES`. Raises nothing on missing metrics.
    """
    dur, dur_how = _duration(values)
    t_s = None if dur is None else dur * 1e-9  # NaN (failed replay) propagates into rate-based counts
    q: dict[str, float | None] = {}
    prov: dict[str, str] = {"duration_ns": dur_how}
    for qty in ("flops_fp64", "flops_fp32", "flops_fp16"):
        q[qty], prov[qty] = _flops(values, qty, fp16, t_s)
    ceilings = _flop_ceilings(values, fp16)
    q["flops_tensor"], prov["flops_tensor"], tensor_ceilings, prov[cat.TENSOR_ROOF_KEY] = _tensor(
        values, t_s, cc
    )
    ceilings += tensor_ceilings
    for qty, level in cat.LEVEL_CEILINGS.items():
        q[qty], prov[qty], fam = _bytes(values, qty, cc, t_s, section)
        fams = [fam] if fam is not None else [f for f in cat.BYTE_FAMILIES[qty] if f.applies(cc)]
        for f in fams:
            c = _byte_ceiling(values, level, f)
            if c is not None:
                ceilings.append(c)
                break
    d = Derived(dur, q, prov, ceilings)
    d.flags = _flags(values, dur, dur_how, d)
    return d
