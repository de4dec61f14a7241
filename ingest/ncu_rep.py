"""Reader for Nsight Compute reports (``.ncu-rep``) through NVIDIA's ``ncu_report`` package.

Entry point: :func:`read`. One kernel row per action of every range; every metric of every action into the long
``metrics`` table (values dispatched on ``IMetric.kind()``: ``as_double()`` on a string metric gives 0.0);
roofline quantities and per-kernel ceilings from :mod:`rooflake.ingest.derive`.
"""

from __future__ import annotations

import json
import math
import re
import struct
from pathlib import Path
from typing import Any

import pyarrow as pa

from rooflake.ingest.derive import derive
from rooflake.ingest.nvtx import range_name
from rooflake.schema import CEILINGS, KERNELS, METRICS, InputError
from rooflake.schema import catalog as cat

MAGIC = b"NVR\x00"
_VERSION_RE = re.compile(rb"(\d{4}\.\d+\.\d+\.\d+ \(build \d+\)(?: \([a-z-]+\))?)")

# ncu_report ValueKind -> our kind name
_KINDS = {0: "unknown", 1: "any", 2: "string", 3: "float", 4: "double", 5: "uint32", 6: "uint64"}
_STRING, _FLOAT, _DOUBLE, _UINT32, _UINT64 = 2, 3, 4, 5, 6
# kernels that should execute FLOPs: F = 0 on them is a physics flag (DESIGN.md section 5)
_GEMM_RE = re.compile(r"gemm|conv|matmul|mma|fmha|flash", re.IGNORECASE)


def check_framing(path: Path, data: bytes) -> None:
    """Check the ``NVR\\0`` magic and that the file's length-prefixed blocks end exactly at end of file.

    ``ncu_report.load_report`` returns 0 ranges for garbage and loads a truncated file partially without error, so
    the framing is checked here. Raises :class:`InputError` naming the file.
    """
    if len(data) == 0:
        raise InputError(f"{path}: empty file")
    if not data.startswith(MAGIC):
        raise InputError(f"{path}: not an Nsight Compute report (no NVR\\0 magic)")
    pos = 4
    while pos + 4 <= len(data):
        (n,) = struct.unpack_from("<I", data, pos)
        pos += 4 + n
    if pos != len(data):
        raise InputError(
            f"{path}: truncated Nsight Compute report (a block ends at byte {pos}, the file has {len(data)})"
        )


def producer_info(data: bytes) -> tuple[str, str | None]:
    """The producing ncu version and the profiler command line, as written in the file's text.

    Returns ``("ncu <version>" | "ncu (pre-2021.2, version not recorded)", command_line | None)``. Literal
    anchors first, regexes only around them: a regex over a whole multi-MB report costs more than reading it.
    """
    producer = "ncu (pre-2021.2, version not recorded)"
    i = data.find(b" (build ")
    if i >= 0 and (m := _VERSION_RE.search(data, max(0, i - 32), i + 64)):
        producer = f"ncu {m.group(1).decode()}"
    cmd = None
    hits = [j for j in (data.find(b"/ncu "), data.find(b"\\ncu.exe "), data.find(b"/ncu.exe ")) if j >= 0]
    if hits:
        j = min(hits)
        start = j
        while start > 0 and 0x20 <= data[start - 1] <= 0x7E and data[start - 1] != 0x22:
            start -= 1
        end = j
        while end < len(data) and 0x20 <= data[end] <= 0x7E:
            end += 1
        text = data[start:end].decode("ascii").strip().rstrip('"').strip()
        # the path begins at the first '/' or drive letter (protobuf length bytes may precede it)
        k = min((x for x in (text.find("/"), text.find(":\\") - 1) if x >= 0), default=0)
        cmd = text[k:] or None
    return producer, cmd


def _value(metric: Any, kind: int, *idx: int) -> Any:
    """``IMetric.value()`` without its per-call dispatch table: the ``as_*`` accessor of ``kind``
    (float/double -> float, uint32/uint64 -> int, string -> str, any/unknown -> None)."""
    if kind in (_DOUBLE, _FLOAT):
        return metric.as_double(*idx)
    if kind in (_UINT64, _UINT32):
        return metric.as_uint64(*idx)
    if kind == _STRING:
        return metric.as_string(*idx)
    return None


def _num(m: Any) -> float | None:
    if m is None:
        return None
    v = m.value()
    if v is None or isinstance(v, str):
        return None
    return float(v)


def _int(m: Any) -> int | None:
    v = _num(m)
    if v is None or math.isnan(v):
        return None
    return int(v)


def _nvtx(action: Any) -> tuple[str | None, list[str] | None, str | None]:
    """(nvtx_path, nvtx_stack, domain) of the first NVTX domain with open push/pop ranges."""
    state = action.nvtx_state()
    if state is None:
        return None, None, None
    for dom_id in state.domains():
        dom = state.domain_by_id(dom_id)
        stack = [range_name(str(s)) or "" for s in dom.push_pop_ranges()]
        if stack:
            name = dom.name()
            return f"{name}:{'/'.join(stack)}", stack, name
    return None, None, None


def roofline_section_metrics(action: Any) -> frozenset[str]:
    """Body metric names of the action's ``SpeedOfLight_*RooflineChart`` sections (empty without them)."""
    names: set[str] = set()
    for sec in action.sections() or ():
        if re.match(cat.ROOFLINE_SECTION_RE, sec.identifier()):
            names.update(m.name() for m in (sec.body_metrics() or ()))
    return frozenset(names)


def _cc(values: dict[str, float]) -> tuple[str | None, float | None]:
    major = values.get("device__attribute_compute_capability_major")
    minor = values.get("device__attribute_compute_capability_minor")
    if major is None or minor is None or math.isnan(major) or math.isnan(minor):
        return None, None
    return f"{int(major)}.{int(minor)}", int(major) + int(minor) / 10


# ncu_report keeps global state between reports: after one report is loaded, units of some metrics of the next
# (breakdown:*, *_pred_on: '%' -> 'byte', 'thread' -> 'inst', seen on 9 of the 14 fixtures) come back wrong, values
# stay right. A process therefore reads at most one report; see rooflake.ingest.read.
_loaded_any = False


def loaded_any() -> bool:
    """Whether this process has loaded a report already (its next one would get contaminated units)."""
    return _loaded_any


def read(path: str | Path, *, run_id: str, fp16: str = "ncu") -> dict[str, Any]:
    """Read one ``.ncu-rep`` into Arrow tables.

    Returns ``{"kernels": pa.Table (schema KERNELS), "metrics": pa.Table (METRICS), "ceilings": pa.Table
    (CEILINGS), "run": dict}`` where ``run`` holds producer, command_line, gpu_name, compute_capability, n_kernels,
    n_metrics and derivation (JSON of formulas used). Raises :class:`InputError` for empty, non-ncu, truncated or
    kernel-less files.
    """
    try:
        return _read(Path(path), run_id, fp16)
    except InputError:
        raise
    except Exception as e:  # noqa: BLE001 - ncu_report and pyarrow raise bare errors on corrupt content
        raise InputError(f"{path}: corrupt Nsight Compute report ({type(e).__name__}: {e})") from e


def _read(path: Path, run_id: str, fp16: str) -> dict[str, Any]:
    import ncu_report  # vendor package, imported late so `rl --help` stays fast

    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror})") from e
    check_framing(path, data)
    producer, cmd = producer_info(data)
    global _loaded_any
    _loaded_any = True
    try:
        ctx = ncu_report.load_report(str(path))
    except Exception as e:  # the vendor library raises bare RuntimeErrors
        raise InputError(f"{path}: ncu_report cannot load it ({e})") from e
    n_ranges = ctx.num_ranges()
    if n_ranges == 0:
        raise InputError(f"{path}: the report holds no ranges (not a readable Nsight Compute report)")

    k: dict[str, list[Any]] = {f.name: [] for f in KERNELS}
    m: dict[str, list[Any]] = {f.name: [] for f in METRICS}
    c: dict[str, list[Any]] = {f.name: [] for f in CEILINGS}
    units: dict[str, str] = {}
    derivation: dict[str, set[str]] = {}
    kernel_id = 0
    for r in range(n_ranges):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            act = rng.action_by_idx(a)
            values: dict[str, float] = {}
            mn, mu, mk, md, ms, mi, mvals, mstrs, mids = (
                m["metric_name"],
                m["unit"],
                m["kind"],
                m["value_double"],
                m["value_string"],
                m["value_uint64"],
                m["instance_values"],
                m["instance_strings"],
                m["instance_ids"],
            )
            names = act.metric_names()
            for name in names:
                metric = act.metric_by_name(name)
                kind = metric.kind()
                unit = units.get(name)
                if unit is None:
                    unit = units[name] = metric.unit()
                mn.append(name)
                mu.append(unit)
                mk.append(_KINDS.get(kind, str(kind)))
                v = _value(metric, kind)
                if kind == _STRING or isinstance(v, str):
                    md.append(None)
                    ms.append(v)
                    mi.append(None)
                elif v is None:
                    md.append(None)
                    ms.append(None)
                    mi.append(None)
                else:
                    fv = float(v)
                    md.append(fv)
                    ms.append(None)
                    mi.append(int(v) if kind in (_UINT32, _UINT64) else None)
                    values[name] = fv
                ninst = metric.num_instances()
                if ninst:
                    inst = [_value(metric, metric.kind(i), i) for i in range(ninst)]
                    if any(isinstance(x, str) for x in inst):
                        mvals.append(None)
                        mstrs.append([None if x is None else str(x) for x in inst])
                    else:
                        mvals.append([None if x is None else float(x) for x in inst])
                        mstrs.append(None)
                    if metric.has_correlation_ids():
                        ids = metric.correlation_ids()
                        mids.append([str(_value(ids, ids.kind(i), i)) for i in range(ids.num_instances())])
                    else:
                        mids.append(None)
                else:
                    mvals.append(None)
                    mstrs.append(None)
                    mids.append(None)
            n = len(names)
            m["run_id"].extend([run_id] * n)
            m["kernel_id"].extend([kernel_id] * n)

            cc_str, cc = _cc(values)
            d = derive(values, cc, fp16, roofline_section_metrics(act))
            gpu = act.metric_by_name("device__attribute_display_name")
            gpu_name = gpu.value() if gpu is not None else None
            path_, stack, domain = _nvtx(act)
            demangled = act.name(ncu_report.IAction.NameBase_DEMANGLED)
            flops = [d.quantities[q] for q in ("flops_fp64", "flops_fp32", "flops_fp16", "flops_tensor")]
            if _GEMM_RE.search(demangled) and any(f is not None for f in flops) and not any(f for f in flops):
                d.flags.append("gemm_without_flops")
            get = act.metric_by_name
            dev = get("launch__device_id") or get("device__attribute_device_index")
            row = {
                "run_id": run_id,
                "kernel_id": kernel_id,
                "range_idx": r,
                "action_idx": a,
                "name": demangled,
                "short_name": act.name(ncu_report.IAction.NameBase_FUNCTION),
                "mangled_name": act.name(ncu_report.IAction.NameBase_MANGLED),
                "grid_x": _int(get("launch__grid_dim_x")),
                "grid_y": _int(get("launch__grid_dim_y")),
                "grid_z": _int(get("launch__grid_dim_z")),
                "block_x": _int(get("launch__block_dim_x")),
                "block_y": _int(get("launch__block_dim_y")),
                "block_z": _int(get("launch__block_dim_z")),
                "grid_size": _int(get("launch__grid_size")),
                "block_size": _int(get("launch__block_size")),
                "registers_per_thread": _int(get("launch__registers_per_thread")),
                "shared_mem_static_bytes": _int(get("launch__shared_mem_per_block_static")),
                "shared_mem_dynamic_bytes": _int(get("launch__shared_mem_per_block_dynamic")),
                "device_id": _int(dev),
                "context_id": _int(get("launch__context_id")),
                "stream_id": _int(get("launch__stream_id")),
                "gpu_name": gpu_name,
                "compute_capability": cc_str,
                "nvtx_path": path_,
                "nvtx_stack": stack,
                "nvtx_domain": domain,
                "start_ns": None,
                "end_ns": None,
                "duration_ns": d.duration_ns,
                **d.quantities,
                "provenance": list(d.provenance.items()),
                "flags": d.flags,
                "attribution": "push_pop" if path_ else "no_range_open",
            }
            for key, col in k.items():
                col.append(row.get(key))
            for qty, how in d.provenance.items():
                derivation.setdefault(qty, set()).add(how)
            sm_clock = values.get("sm__cycles_elapsed.avg.per_second")
            mhz = "?" if sm_clock is None or math.isnan(sm_clock) else f"{sm_clock / 1e6:.0f}MHz"
            machine_key = f"{gpu_name}|{cc_str}|{mhz}"
            for ce in d.ceilings:
                c["run_id"].append(run_id)
                c["kernel_id"].append(kernel_id)
                c["machine_key"].append(machine_key)
                c["ceiling"].append(ce.ceiling)
                c["kind"].append(ce.kind)
                c["value"].append(ce.value)
                c["unit"].append("byte/s" if ce.kind == "bandwidth" else "FLOP/s")
                c["clock_hz"].append(ce.clock_hz)
                c["formula"].append(ce.formula)
                c["source"].append("ncu-report")
                c["source_name"].append(None)
                c["measured_at"].append(None)
                c["details"].append(None)
            kernel_id += 1
    if kernel_id == 0:
        raise InputError(f"{path}: the report holds {n_ranges} range(s) but no profiled kernels")
    kernels = pa.table(k, schema=KERNELS)
    metrics = pa.table(m, schema=METRICS)
    ceilings = pa.table(c, schema=CEILINGS)
    first = {f: k[f][0] for f in ("gpu_name", "compute_capability")}
    return {
        "kernels": kernels,
        "metrics": metrics,
        "ceilings": ceilings,
        "run": {
            "source_format": "ncu-rep",
            "producer": producer,
            "command_line": cmd,
            "host": None,
            **first,
            "n_kernels": kernels.num_rows,
            "n_metrics": metrics.num_rows,
            "derivation": json.dumps({q: sorted(v) for q, v in sorted(derivation.items())}),
            "fp16_convention": fp16,
        },
    }
