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


def _tensor_src_names(v: Mapping[str, float]) -> list[str]:
    """Aggregate ``sm__ops_path_tensor_src_<k>`` bases present in the report, dropping finer variants of one."""
    pat = re.compile(re.escape(cat.TENSOR_SRC_PREFIX) + r"([a-z0-9_]+)\.sum(?:\.per_cycle_elapsed)?$")
    kinds = sorted({m.group(1) for n in v if (m := pat.match(n)) and "_op_" not in n})
    return [k for k in kinds if not any(k != o and k.startswith(o + "_") for o in kinds)]


def _tensor(
    v: Mapping[str, float], t_s: float | None, cc: float | None
) -> tuple[float | None, str, list[str]]:
    kinds = _tensor_src_names(v)
    if kinds:
        total, terms = 0.0, []
        for k in kinds:
            base = f"{cat.TENSOR_SRC_PREFIX}{k}"
            if f"{base}.sum" in v:
                total += v[f"{base}.sum"]
                terms.append(f"{base}.sum")
                continue
            rate, clock = f"{base}.sum.per_cycle_elapsed", "sm__cycles_elapsed.avg.per_second"
            if clock in v and t_s is not None:
                total += v[rate] * v[clock] * t_s
                terms.append(f"{rate} * {clock} * duration")
            else:
                return None, f"NULL: {rate} without {clock} or duration", kinds
        return total, " + ".join(terms), kinds
    count, how = _inst_count(v, cat.TENSOR_PIPE_BASE, t_s)
    if count is None:
        return (
            None,
            f"NULL: missing {cat.TENSOR_SRC_PREFIX}*.sum and {how} (or their per_cycle_elapsed rates)",
            [],
        )
    if cc is None or not 7.0 <= cc < 7.5:
        # 512 ops per tensor-pipe instruction holds on Volta only (DESIGN.md section 5); later GPUs do 2-8x more
        # per HMMA, so a count from it would be silently low
        return (
            None,
            f"NULL: only {how} counted, and {cat.TENSOR_PIPE_FACTOR} ops per tensor instruction holds on Volta "
            f"(CC 7.0) only, not on CC {cc}; profile with ncu >= 2023.2 for {cat.TENSOR_SRC_PREFIX}* op counts",
            [],
        )
    return count * cat.TENSOR_PIPE_FACTOR, f"{cat.TENSOR_PIPE_FACTOR}*{how}", []


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


def derive(
    values: Mapping[str, float], cc: float | None, fp16: str = "ncu", section: frozenset[str] = frozenset()
) -> Derived:
    """Derive duration, FLOPs per precision, bytes per level and the ceilings of one kernel.

    ``values``: numeric metric values by ncu metric name (base units as the report holds them: ns, byte,
    inst, inst/cycle, byte/s, Hz). ``cc``: compute capability as ``major + minor/10`` or None.
    Returns :class:`Derived`. FLOPs: add + mul + 2 fma (FP16 per ``fp16``: 'ncu' 2/2/4 or 'nersc' 1/1/2);
    Tensor: sum of ``sm__ops_path_tensor_src_*`` ops, else 512 x tensor-pipe instructions (ncu <= 2023.1
    sections). Bytes and ceilings: :data:`catalog.BYTE_FAMILIES`. Raises nothing on missing metrics.
    """
    dur, dur_how = _duration(values)
    t_s = None if dur is None else dur * 1e-9  # NaN (failed replay) propagates into rate-based counts
    q: dict[str, float | None] = {}
    prov: dict[str, str] = {"duration_ns": dur_how}
    ceilings: list[Ceiling] = []
    for qty in ("flops_fp64", "flops_fp32", "flops_fp16"):
        q[qty], prov[qty] = _flops(values, qty, fp16, t_s)
        name, fma = cat.FLOP_CEILINGS[qty]
        factor = cat.FLOP_OPS[qty][fp16 if qty == "flops_fp16" else "ncu"][fma]
        peak = f"sm__{cat.INST_BASE.format(op=fma)}.sum.peak_sustained"
        clock = "sm__cycles_elapsed.avg.per_second"
        if peak in values and clock in values:
            ceilings.append(
                Ceiling(
                    name,
                    "compute",
                    values[peak] * factor * values[clock],
                    values[clock],
                    f"{factor} * {peak} * {clock}",
                )
            )
    q["flops_tensor"], prov["flops_tensor"], kinds = _tensor(values, t_s, cc)
    clock = "sm__cycles_elapsed.avg.per_second"
    for k in kinds:
        # the src_<k> peak counts 2:4 sparsity (H100 fp16: 8192 ops/clk/SM); the dense roof is the fastest
        # op_*_src_<k>*_sparsity_off path (hgmma: 4096), where the report has them
        dense_re = re.compile(
            rf"^sm__ops_path_tensor_op_[a-z0-9]+_src_{re.escape(k)}(?:_dst_[a-z0-9]+)?_sparsity_off\.sum\.peak_sustained$"
        )
        dense = sorted((values[n], n) for n in values if dense_re.match(n))
        peak = dense[-1][1] if dense else f"{cat.TENSOR_SRC_PREFIX}{k}.sum.peak_sustained"
        if peak in values and clock in values:
            ceilings.append(
                Ceiling(
                    f"TENSOR_{k.upper()}",
                    "compute",
                    values[peak] * values[clock],
                    values[clock],
                    f"{peak} * {clock}",
                )
            )
    if not kinds and q["flops_tensor"] is not None:  # the x512 roof only where the x512 count holds (Volta)
        peak = f"sm__{cat.TENSOR_PIPE_BASE}.sum.peak_sustained"
        if peak in values and clock in values:
            ceilings.append(
                Ceiling(
                    "TENSOR",
                    "compute",
                    values[peak] * cat.TENSOR_PIPE_FACTOR * values[clock],
                    values[clock],
                    f"{cat.TENSOR_PIPE_FACTOR} * {peak} * {clock}",
                )
            )
    for qty, level in cat.LEVEL_CEILINGS.items():
        q[qty], prov[qty], fam = _bytes(values, qty, cc, t_s, section)
        fams = [fam] if fam is not None else [f for f in cat.BYTE_FAMILIES[qty] if f.applies(cc)]
        for f in fams:
            c = _byte_ceiling(values, level, f)
            if c is not None:
                ceilings.append(c)
                break

    flags: list[str] = []
    if dur is not None and math.isnan(dur):
        flags.append("nan_duration")
    if dur is None:
        flags.append("no_duration")
    if dur_how.startswith(cat.NERSC_TIME[0]) and any("sass_thread_inst_executed" in n for n in values):
        # the time comes from sm__cycles_elapsed of a pass that also ran SASS instruction counters (the FLOP half
        # of a NERSC split run): instrumented, far longer than the kernel (GENE: 140 ms vs 0.92 ms)
        flags.append("duration_from_instrumented_cycles")
    if any(isinstance(x, float) and math.isnan(x) for x in values.values()):
        flags.append("nan_metrics")
    if any(c.value == 0 or math.isnan(c.value) for c in ceilings):
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
    return Derived(dur, q, prov, ceilings, flags)
