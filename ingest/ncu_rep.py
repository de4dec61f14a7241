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

from rooflake.ingest.derive import derive, flag_gemm_without_flops
from rooflake.ingest.messages import Captured, captured_stderr, first_line, shown, utf8_named
from rooflake.ingest.nvtx import range_name
from rooflake.schema import CEILINGS, KERNELS, METRICS, InputError
from rooflake.schema import catalog as cat
from rooflake.schema.without_pandas import pyarrow_without_pandas

MAGIC = b"NVR\x00"
_VERSION_RE = re.compile(rb"(\d{4}\.\d+\.\d+\.\d+ \(build \d+\)(?: \([a-z-]+\))?)")

# ncu_report ValueKind -> our kind name
_KINDS = {0: "unknown", 1: "any", 2: "string", 3: "float", 4: "double", 5: "uint32", 6: "uint64"}
_STRING, _FLOAT, _DOUBLE, _UINT32, _UINT64 = 2, 3, 4, 5, 6


def check_framing(path: Path, data: bytes) -> None:
    """Check the ``NVR\\0`` magic and that the file's length-prefixed blocks end exactly at end of file.

    ``ncu_report.load_report`` returns 0 ranges for garbage and loads a truncated file partially without error, so
    the framing is checked here. Raises :class:`InputError` naming the file.
    """
    if len(data) == 0:
        raise InputError(f"{shown(path)}: empty file")
    if not data.startswith(MAGIC):
        raise InputError(f"{shown(path)}: not an Nsight Compute report (no NVR\\0 magic)")
    pos = 4
    while pos + 4 <= len(data):
        (n,) = struct.unpack_from("<I", data, pos)
        pos += 4 + n
    if pos != len(data):
        raise InputError(
            f"{shown(path)}: truncated Nsight Compute report (a block ends at byte {pos}, the file has {len(data)})"
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
    n_metrics and derivation (JSON of formulas used). Raises :class:`InputError` (one line) for empty, non-ncu,
    truncated, corrupt or kernel-less files; what ``ncu_report`` writes to stderr meanwhile is captured (its last
    line goes into the error).
    """
    path = Path(path)
    with captured_stderr() as noise, utf8_named(path, "report.ncu-rep") as name:
        try:
            return _read(path, str(name), run_id, fp16, noise)
        except InputError:
            raise
        except Exception as e:  # noqa: BLE001 - ncu_report and pyarrow raise bare errors on corrupt content
            said = _said(noise)
            raise InputError(
                f"{shown(path)}: corrupt Nsight Compute report ({type(e).__name__}: {first_line(e)}){said}"
            ) from e


def _said(noise: Captured) -> str:
    """``; ncu_report: <its last line on stderr>``, or nothing when it wrote nothing."""
    lines = noise.lines()
    return f"; ncu_report: {lines[-1]}" if lines else ""


def _load(path: Path, name: str, noise: Captured) -> tuple[Any, str, str | None]:
    """(``ncu_report`` context, producer, command line) of the report at ``path`` (``ncu_report`` opens it as
    ``name``: :func:`rooflake.ingest.messages.utf8_named`), after checking its framing. Raises
    :class:`InputError` when it cannot be read or holds no ranges."""
    import ncu_report  # vendor package, imported late so `rl --help` stays fast

    try:
        data = path.read_bytes()
    except OSError as e:
        raise InputError(f"{shown(path)}: cannot read ({e.strerror})") from e
    check_framing(path, data)
    producer, cmd = producer_info(data)
    global _loaded_any
    _loaded_any = True
    try:
        ctx = ncu_report.load_report(name)
    except Exception as e:  # the vendor library raises bare RuntimeErrors
        raise InputError(f"{shown(path)}: ncu_report cannot load it ({first_line(e)}){_said(noise)}") from e
    if ctx.num_ranges() == 0:
        raise InputError(
            f"{shown(path)}: the report holds no ranges (not a readable Nsight Compute report){_said(noise)}"
        )
    return ctx, producer, cmd


class _Tables:
    """The rows read so far, column by column (schemas KERNELS, METRICS, CEILINGS), the unit of each metric name
    (read once: ``IMetric.unit()`` is slow), and the formulas used for each derived quantity."""

    def __init__(self) -> None:
        self.k: dict[str, list[Any]] = {f.name: [] for f in KERNELS}
        self.m: dict[str, list[Any]] = {f.name: [] for f in METRICS}
        self.c: dict[str, list[Any]] = {f.name: [] for f in CEILINGS}
        self.units: dict[str, str] = {}
        self.derivation: dict[str, set[str]] = {}


def _read(path: Path, name: str, run_id: str, fp16: str, noise: Captured) -> dict[str, Any]:
    ctx, producer, cmd = _load(path, name, noise)
    t = _Tables()
    kernel_id = 0
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            act = rng.action_by_idx(a)
            values = _metrics(act, t, run_id, kernel_id)
            _kernel(act, (r, a), values, t, run_id, kernel_id, fp16)
            kernel_id += 1
    if kernel_id == 0:
        raise InputError(
            f"{shown(path)}: the report holds {ctx.num_ranges()} range(s) but no profiled kernels"
        )
    with pyarrow_without_pandas():
        kernels = pa.table(t.k, schema=KERNELS)
        metrics = pa.table(t.m, schema=METRICS)
        ceilings = pa.table(t.c, schema=CEILINGS)
    return {
        "kernels": kernels,
        "metrics": metrics,
        "ceilings": ceilings,
        "run": {
            "source_format": "ncu-rep",
            "producer": producer,
            "command_line": cmd,
            "host": None,
            **{f: t.k[f][0] for f in ("gpu_name", "compute_capability")},
            "n_kernels": kernels.num_rows,
            "n_metrics": metrics.num_rows,
            "derivation": json.dumps({q: sorted(v) for q, v in sorted(t.derivation.items())}),
            "fp16_convention": fp16,
        },
    }


def _metrics(act: Any, t: _Tables, run_id: str, kernel_id: int) -> dict[str, float]:
    """Append every metric of action ``act`` to ``t.m`` (value by its kind, instances); returns the numeric values
    by name (the input of :func:`rooflake.ingest.derive.derive`)."""
    values: dict[str, float] = {}
    m, units = t.m, t.units
    mn, mu, mk, md, ms, mi = (m[c] for c in ("metric_name", "unit", "kind", "value_double", "value_string",
                                             "value_uint64"))  # fmt: skip
    mvals, mstrs, mids = m["instance_values"], m["instance_strings"], m["instance_ids"]
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
            inst_vals, inst_strs, inst_ids = _instances(metric, ninst)
            mvals.append(inst_vals)
            mstrs.append(inst_strs)
            mids.append(inst_ids)
        else:
            mvals.append(None)
            mstrs.append(None)
            mids.append(None)
    m["run_id"].extend([run_id] * len(names))
    m["kernel_id"].extend([kernel_id] * len(names))
    return values


def _instances(metric: Any, n: int) -> tuple[list[Any] | None, list[Any] | None, list[str] | None]:
    """(numeric values, string values, correlation ids as text) of an instanced metric's ``n`` instances: one of
    the first two is None."""
    inst = [_value(metric, metric.kind(i), i) for i in range(n)]
    ids = None
    if metric.has_correlation_ids():
        c = metric.correlation_ids()
        ids = [str(_value(c, c.kind(i), i)) for i in range(c.num_instances())]
    if any(isinstance(x, str) for x in inst):
        return None, [None if x is None else str(x) for x in inst], ids
    return [None if x is None else float(x) for x in inst], None, ids


def _kernel(
    act: Any,
    where: tuple[int, int],
    values: dict[str, float],
    t: _Tables,
    run_id: str,
    kernel_id: int,
    fp16: str,
) -> None:
    """Append action ``act``'s kernel row (at ``where`` = (range, action) index) to ``t.k`` and its ceilings to
    ``t.c``, from the derived roofline quantities of its metric ``values``."""
    import ncu_report

    cc_str, cc = _cc(values)
    d = derive(values, cc, fp16, roofline_section_metrics(act))
    gpu = act.metric_by_name("device__attribute_display_name")
    gpu_name = gpu.value() if gpu is not None else None
    path_, stack, domain = _nvtx(act)
    demangled = act.name(ncu_report.IAction.NameBase_DEMANGLED)
    flag_gemm_without_flops(d, demangled)
    row = {
        "run_id": run_id,
        "kernel_id": kernel_id,
        "range_idx": where[0],
        "action_idx": where[1],
        "name": demangled,
        "short_name": act.name(ncu_report.IAction.NameBase_FUNCTION),
        "mangled_name": act.name(ncu_report.IAction.NameBase_MANGLED),
        **_launch(act),
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
    for key, col in t.k.items():
        col.append(row.get(key))
    for qty, how in d.provenance.items():
        t.derivation.setdefault(qty, set()).add(how)
    _ceilings(t, d.ceilings, values, f"{gpu_name}|{cc_str}", run_id, kernel_id)


def _ceilings(
    t: _Tables, ceilings: list[Any], values: dict[str, float], machine: str, run_id: str, kernel_id: int
) -> None:
    """Append a kernel's ceilings (peaks at its clocks) to ``t.c``; machine key = ``gpu|cc|<sm clock>MHz``. Columns
    of CEILINGS that the report does not fill (source_name, measured_at, details) are NULL."""
    sm_clock = values.get("sm__cycles_elapsed.avg.per_second")
    mhz = "?" if sm_clock is None or math.isnan(sm_clock) else f"{sm_clock / 1e6:.0f}MHz"
    for ce in ceilings:
        row = {
            "run_id": run_id,
            "kernel_id": kernel_id,
            "machine_key": f"{machine}|{mhz}",
            "ceiling": ce.ceiling,
            "kind": ce.kind,
            "value": ce.value,
            "unit": "byte/s" if ce.kind == "bandwidth" else "FLOP/s",
            "clock_hz": ce.clock_hz,
            "formula": ce.formula,
            "source": "ncu-report",
        }
        for key, col in t.c.items():
            col.append(row.get(key))


# kernel columns from launch__* metrics (integers; the device id from launch__device_id, else the device index)
_LAUNCH = {
    **{f"{d}_{a}": f"launch__{d}_dim_{a}" for d in ("grid", "block") for a in "xyz"},
    "grid_size": "launch__grid_size",
    "block_size": "launch__block_size",
    "registers_per_thread": "launch__registers_per_thread",
    "shared_mem_static_bytes": "launch__shared_mem_per_block_static",
    "shared_mem_dynamic_bytes": "launch__shared_mem_per_block_dynamic",
    "context_id": "launch__context_id",
    "stream_id": "launch__stream_id",
}


def _launch(act: Any) -> dict[str, int | None]:
    """The launch columns of a kernel row (grid/block dims, registers, shared memory, device/context/stream)."""
    get = act.metric_by_name
    dev = get("launch__device_id") or get("device__attribute_device_index")
    return {col: _int(get(metric)) for col, metric in _LAUNCH.items()} | {"device_id": _int(dev)}
