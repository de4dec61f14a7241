"""Reader for Nsight Compute CSV exports (``ncu --csv``, ``ncu --import R.ncu-rep --csv --page raw|details``).

Entry point: :func:`read`; :func:`sniff` tells an export from other text by its header row. Two shapes exist:

- ``--page raw``: one row per kernel launch, one column per metric, and (``--print-units``) a units row under the
  header whose launch columns are empty.
- ``--page details`` and ``--metrics`` lists (the NERSC scripts' way): one row per launch x metric with ``Section
  Name``, ``Metric Name``, ``Metric Unit``, ``Metric Value``; the ``details`` page mixes ncu metric names with
  the sections' human labels (``Duration``, ``DRAM Frequency``) and rule rows (``Rule Name``, ``Rule
  Description``).

What the files hold, and what the reader does with it:
- Tool output before the header (``==PROF==`` lines, the program's own prints) is skipped; the header is the first
  row whose first field is ``ID`` and that has a ``Kernel Name`` column.
- Numbers carry thousands separators (``1,937,900,416``) and units scaled for reading (``2.33 Mbyte``, ``6.75
  us``, ``345.14 Gbyte/s``, ``1.99 Ghz``): stored in base units (byte, nsecond, byte/second, cycle/second; ncu
  prefixes are decimal: 2.33 Mbyte / 6.75 us = 345 Gbyte/s), as ``ncu_report`` gives them, to the CSV's printed
  precision. ``n/a`` and empty values are NULL (kind ``unknown``).
- Rows are ragged (a trailing comma, rule columns on some rows only): fields are matched to the header by position.
- Old exports name the launch time ``Kernel Time`` and have no ``Block Size``/``Grid Size``/``Device``/``CC``
  columns; those come from ``launch__*``/``device__*`` metrics where present.
- Human labels are stored as ``<Section Name>: <label>`` (labels repeat across sections); ncu metric names
  verbatim; the Launch Statistics labels of block size, grid size and registers fill the kernel's columns; rule rows as ``rule:<Rule Name>`` (string value: the description, unit: the rule type).
- Derived FLOPs, bytes, duration and ceilings come from :func:`rooflake.ingest.derive.derive`, exactly as for
  ``.ncu-rep`` files (the CSV has no section list, so the byte family follows the compute capability).
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from rooflake.ingest.derive import derive, flag_gemm_without_flops
from rooflake.ingest.messages import shown
from rooflake.schema import CEILINGS, KERNELS, METRICS, InputError, UnsupportedFormatError

SOURCE_FORMAT = "ncu-csv"
EXPORT_HINT = "ncu --import REPORT.ncu-rep --csv --page raw --print-units base > REPORT.csv"
# columns that describe the launch, not a metric (all ncu versions seen)
LAUNCH_COLUMNS = {
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Kernel Time",
    "Context",
    "Stream",
    "Block Size",
    "Grid Size",
    "Device",
    "CC",
    "Section Name",
    "Metric Name",
    "Metric Unit",
    "Metric Value",
    "Rule Name",
    "Rule Type",
    "Rule Description",
    "Estimated Speedup Type",
    "Estimated Speedup",
}
NVTX_PUSH_POP = "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"
# ncu metric names are lower case without spaces (``dram__bytes.sum``, ``flop_count_sp.sum``); the details page's
# labels are not (``Duration``, ``Block Size``)
_METRIC_NAME_RE = re.compile(
    r"^[a-z][a-z0-9_]*(?:__[a-z0-9_]+)?(?:\.[a-z0-9_]+)+$|^[a-z][a-z0-9]*__[a-z0-9_.]+$"
)
# the Launch Statistics section's labels (details page) -> the launch__ metric each shows
LAUNCH_LABELS = {
    "launch__block_size": "Launch Statistics: Block Size",
    "launch__grid_size": "Launch Statistics: Grid Size",
    "launch__registers_per_thread": "Launch Statistics: Registers Per Thread",
}
_THOUSANDS_RE = re.compile(r"^-?\d{1,3}(,\d{3})+(\.\d+)?$")
_INT_RE = re.compile(r"^-?\d+$")
_NUM_RE = re.compile(r"^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")
_MISSING = {"", "n/a", "N/A", "no data"}
# unit scaling to ncu_report's base units (SI prefixes are decimal in ncu's output)
_PREFIX = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_TIME_NS = {
    "nsecond": 1.0,
    "ns": 1.0,
    "usecond": 1e3,
    "us": 1e3,
    "msecond": 1e6,
    "ms": 1e6,
    "second": 1e9,
    "s": 1e9,
}
_PER_SECOND = {"second": 1.0, "s": 1.0, "msecond": 1e3, "ms": 1e3, "usecond": 1e6, "us": 1e6, "nsecond": 1e9}
_BASE_WORDS = {
    "byte",
    "inst",
    "cycle",
    "sector",
    "request",
    "warp",
    "thread",
    "block",
    "op",
    "flop",
    "wavefront",
}


def sniff(path: str | Path, head: bytes) -> bool:
    """Whether ``head`` (a file's first bytes) is the start of an ncu CSV export (a header row ``"ID",...`` with a
    ``Kernel Name`` column, after any tool output). Raises :class:`UnsupportedFormatError` for text that looks
    like a CSV but is not an ncu export (saying why, and how to export one); False for anything else."""
    if b"\x00" in head:
        return False
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    lines = text.splitlines()[:-1] if len(head) >= 1 << 16 else text.splitlines()
    if any(_header_fields(line) for line in lines):
        return True
    first = next((ln for ln in lines if ln.strip()), "")
    if str(path).lower().endswith(".csv") or first.count(",") >= 2:
        raise UnsupportedFormatError(
            f'{shown(path)}: a CSV file, but not an Nsight Compute export: no header row starting with "ID" and '
            f'holding a "Kernel Name" column in its first 64 KiB (first line: {first[:80]!r}). Export one with '
            f"`{EXPORT_HINT}`"
        )
    return False


def _header_fields(line: str) -> list[str] | None:
    if not line.startswith('"ID"') and not line.startswith("ID,"):
        return None
    try:
        fields = next(csv.reader([line]), [])
    except csv.Error:  # not a header, whatever else it is
        return None
    return fields if fields and fields[0] == "ID" and "Kernel Name" in fields else None


@dataclass
class Launch:
    """One kernel launch of the export: its launch columns and metrics (name -> (unit, printed text))."""

    id: str
    info: dict[str, str]
    metrics: dict[str, tuple[str, str]] = field(default_factory=dict)


def read(path: str | Path, *, run_id: str, fp16: str = "ncu") -> dict[str, Any]:
    """Read one ncu CSV export.

    Returns ``{"kernels": pa.Table (KERNELS), "metrics": pa.Table (METRICS; values in base units, kind uint64
    for printed integers, double for decimals, string, or unknown for n/a), "ceilings": pa.Table (CEILINGS,
    source 'ncu-report': the report's peaks as exported), "run": dict (source_format 'ncu-csv', producer,
    host, gpu_name, compute_capability, n_kernels, n_metrics, derivation, fp16_convention, note)}``.
    Formulas: :mod:`rooflake.ingest.derive` (NERSC method and ncu's roofline sections). Raises
    :class:`InputError` for unreadable text, no header, or a header without metric columns or rows.
    """
    path = Path(path)
    preamble, header, rows = _load(path)
    launches, form = _launches(path, header, rows)
    if not launches:
        raise InputError(f"{shown(path)}: the ncu CSV export holds a header but no kernel rows")
    k: dict[str, list[Any]] = {f.name: [] for f in KERNELS}
    m: dict[str, list[Any]] = {f.name: [] for f in METRICS}
    c: dict[str, list[Any]] = {f.name: [] for f in CEILINGS}
    derivation: dict[str, set[str]] = {}
    for kernel_id, launch in enumerate(launches):
        values = _metric_rows(m, run_id, kernel_id, launch)
        row, ceilings = _kernel(launch, values, run_id, kernel_id, fp16)
        for key, col in k.items():
            col.append(row.get(key))
        for key, col in c.items():
            col.extend(ce.get(key) for ce in ceilings)
        for qty, how in row["provenance"]:
            derivation.setdefault(qty, set()).add(how)
    kernels = pa.table(k, schema=KERNELS)
    metrics = pa.table(m, schema=METRICS)
    note = f"{form} page, {len(launches)} launches"
    if preamble:
        note += f", {preamble} lines of tool output before the header skipped"
    return {
        "kernels": kernels,
        "metrics": metrics,
        "ceilings": pa.table(c, schema=CEILINGS),
        "run": {
            "source_format": SOURCE_FORMAT,
            "producer": "ncu CSV export (version not recorded)",
            "command_line": None,
            "host": launches[0].info.get("Host Name") or None,
            "gpu_name": k["gpu_name"][0],
            "compute_capability": k["compute_capability"][0],
            "n_kernels": kernels.num_rows,
            "n_metrics": metrics.num_rows,
            "derivation": json.dumps({q: sorted(v) for q, v in sorted(derivation.items())}),
            "fp16_convention": fp16,
            "note": note,
        },
    }


def _load(path: Path) -> tuple[int, list[str], list[list[str]]]:
    """(lines before the header, header fields, the rows after it) of the CSV text."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise InputError(f"{shown(path)}: cannot read ({e.strerror})") from e
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        header = _header_fields(line.rstrip("\r\n"))
        if header:
            try:
                rows = list(csv.reader(io.StringIO("".join(lines[i + 1 :]))))
            except csv.Error as e:
                raise InputError(
                    f"{shown(path)}: not a well-formed CSV after the header line {i + 1} ({e})"
                ) from e
            rows = [r for r in rows if any(x.strip() for x in r)]
            if rows and not text.endswith(("\n", "\r")):
                _check_last_row(path, header, lines[-1], rows[-1])
            return i, header, rows
    raise InputError(
        f'{shown(path)}: no ncu CSV header (a row starting with "ID" with a "Kernel Name" column)'
    )


def _check_last_row(path: Path, header: list[str], line: str, row: list[str]) -> None:
    """Raise :class:`InputError` when the file's last line, which ends without a line break, is a row cut short:
    ncu ends every row with one and quotes every field, so a last line that stops inside a quoted field (an odd
    number of quotes), after a separator or in an unquoted value, or that holds fewer fields than the header needs
    (a long export: up to ``Metric Value``; a wide one: every column), is what is left of a truncated file. A
    complete last row whose line break alone is missing is read as it is."""
    need = header.index("Metric Value") + 1 if "Metric Value" in header else len(header)
    line = line.rstrip()
    if line.count('"') % 2 == 0 and line.endswith('"') and len(row) >= need:
        return
    raise InputError(
        f"{shown(path)}: a truncated ncu CSV export: its last line ends inside a row ({len(row)} of the header's "
        f"{len(header)} fields, no line break); export it again: `{EXPORT_HINT}`"
    )


def _launches(path: Path, header: list[str], rows: list[list[str]]) -> tuple[list[Launch], str]:
    """The launches of a long (``Metric Name``/``Metric Value``) or wide (raw page) export, in file order."""
    if "Metric Name" in header and "Metric Value" in header:
        return list(_long(header, rows)), "details/metrics (long)"
    metric_cols = [h for h in header if h not in LAUNCH_COLUMNS and "Domain:" not in h]
    if not metric_cols:
        raise InputError(
            f"{shown(path)}: an ncu CSV export without metric values (neither 'Metric Value' nor metric columns); "
            f"export with `{EXPORT_HINT}`"
        )
    units = [""] * len(header)
    if rows and not rows[0][0].strip():  # --print-units: a units row with empty launch columns
        units = rows[0] + [""] * (len(header) - len(rows[0]))
        rows = rows[1:]
    out = []
    for r in rows:
        d = dict(zip(header, r, strict=False))  # ragged rows: match by position
        launch = Launch(d.get("ID", ""), {h: d.get(h, "") for h in header if h not in metric_cols})
        launch.metrics = {
            h: (u, d.get(h, "")) for h, u in zip(header, units, strict=False) if h in metric_cols
        }
        out.append(launch)
    return out, "raw (wide)"


def _long(header: list[str], rows: list[list[str]]) -> Iterator[Launch]:
    current: Launch | None = None
    for r in rows:
        d = dict(zip(header, r, strict=False))  # ragged rows: match by position
        if current is None or d.get("ID") != current.id:
            if current is not None:
                yield current
            info = {
                h: d.get(h, "")
                for h in header
                if h in LAUNCH_COLUMNS and not h.startswith(("Metric", "Rule"))
            }
            current = Launch(d.get("ID", ""), info)
        name, section = d.get("Metric Name", ""), d.get("Section Name", "")
        if name:
            key = name if _METRIC_NAME_RE.match(name) else f"{section}: {name}"
            current.metrics.setdefault(key, (d.get("Metric Unit", ""), d.get("Metric Value", "")))
        elif d.get("Rule Name"):
            rule = f"rule:{d['Rule Name']}"
            current.metrics.setdefault(rule, (d.get("Rule Type", ""), d.get("Rule Description", "")))
    if current is not None:
        yield current


def parse_value(text: str, unit: str) -> tuple[str, str, float | None, str | None, int | None]:
    """(unit, kind, value_double, value_string, value_uint64) of one printed CSV value, in base units.

    Thousands separators are dropped; ``n/a``/empty give kind ``unknown``; integers kind ``uint64`` (exact, when
    non-negative and unscaled), decimals and negative integers ``double`` (no uint64 holds them); anything else
    ``string``.
    """
    t = text.strip()
    if t in _MISSING:
        return unit, "unknown", None, None, None
    if _THOUSANDS_RE.match(t):
        t = t.replace(",", "")
    if not _NUM_RE.match(t):
        return unit, "string", None, text, None
    base, factor = to_base_unit(unit)
    if _INT_RE.match(t) and factor == 1 and not t.startswith("-"):
        n = int(t)
        return base, "uint64", float(n), None, n
    return base, "double", float(t) * factor, None, None


def to_base_unit(unit: str) -> tuple[str, float]:
    """(base unit, factor) for a unit as ncu prints it: time -> nsecond, ``*hz`` -> cycle/second, ``<SI
    prefix><word>[/<time>]`` -> ``<word>[/second]``; other units unchanged (factor 1)."""
    if unit in _TIME_NS:
        return "nsecond", _TIME_NS[unit]
    if unit.lower().endswith("hz") and unit[:-2].upper() in ("", *_PREFIX):
        return "cycle/second", _PREFIX.get(unit[:-2].upper(), 1.0)
    num, _, den = unit.partition("/")
    factor = 1.0
    if len(num) > 1 and num[0] in _PREFIX and num[1:] in _BASE_WORDS:
        factor, num = _PREFIX[num[0]], num[1:]
    if den in _PER_SECOND:
        factor, den = factor * _PER_SECOND[den], "second"
    return (f"{num}/{den}" if den else num), factor


def _metric_rows(m: dict[str, list[Any]], run_id: str, kernel_id: int, launch: Launch) -> dict[str, float]:
    """Append the launch's metrics to the ``metrics`` columns; returns its numeric values by name."""
    values: dict[str, float] = {}
    for name, (unit, text) in launch.metrics.items():
        base, kind, d, s, u = parse_value(text, unit)
        if name.startswith("rule:"):
            base, kind, d, s, u = unit, "string", None, text, None
        for col, v in (
            ("run_id", run_id),
            ("kernel_id", kernel_id),
            ("metric_name", name),
            ("unit", base),
            ("kind", kind),
            ("value_double", d),
            ("value_string", s),
            ("value_uint64", u),
            ("instance_values", None),
            ("instance_strings", None),
            ("instance_ids", None),
        ):
            m[col].append(v)
        if d is not None:
            values[name] = d
    return values


def _dims(text: str) -> list[int | None]:
    """``(32, 4, 1)`` -> [32, 4, 1]; anything else -> three Nones."""
    nums = re.findall(r"\d+", text or "")
    return [int(x) for x in nums] if len(nums) == 3 else [None, None, None]


def _int(values: dict[str, float], *names: str) -> int | None:
    for n in names:
        v = values.get(n)
        if v is not None and not math.isnan(v):
            return int(v)
    return None


def _cc(info: dict[str, str], values: dict[str, float]) -> tuple[str | None, float | None]:
    major = values.get("device__attribute_compute_capability_major")
    minor = values.get("device__attribute_compute_capability_minor")
    if major is not None and minor is not None:
        return f"{int(major)}.{int(minor)}", int(major) + int(minor) / 10
    m = re.fullmatch(r"(\d+)\.(\d+)", info.get("CC", "").strip())
    return (f"{m.group(1)}.{m.group(2)}", int(m.group(1)) + int(m.group(2)) / 10) if m else (None, None)


def base_name(demangled: str) -> str:
    """Function base name of a demangled kernel name: no return type, namespace, template arguments or
    parameters (``void ns::k<float, 4>(int *)`` -> ``k``), as ncu's ``--kernel-name-base function``."""
    out, depth = [], 0
    for ch in demangled:  # drop everything inside <...> and (...), keeping top-level text
        if ch in "<(":
            depth += 1
        elif ch in ">)" and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    text = "".join(out).strip()
    last = text.split()[-1] if text.split() else demangled
    return last.split("::")[-1] or demangled


def nvtx_stack(text: str) -> tuple[str | None, list[str] | None, str | None]:
    """(nvtx_path, stack, domain) from the raw page's push/pop column: ``TID "dom:name:PL_Type:PL_Value:
    CLR_Type:Color:Msg_Type:Msg" ...`` (outermost first); the first domain's ranges, as the ncu_rep reader."""
    items = re.findall(r'"([^"]*)"', text or "")
    stack, domain = [], None
    for item in items:
        parts = item.split(":")
        if len(parts) < 8:
            continue
        dom, name = parts[0], ":".join(parts[1:-6])
        if domain is None:
            domain = dom
        if dom == domain:
            stack.append(name)
    if not stack:
        return None, None, None
    return f"{domain}:{'/'.join(stack)}", stack, domain


def _kernel(
    launch: Launch, values: dict[str, float], run_id: str, kernel_id: int, fp16: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The ``kernels`` row of one launch and its ``ceilings`` rows (derive(), as for .ncu-rep files)."""
    info = launch.info
    cc_str, cc = _cc(info, values)
    d = derive(values, cc, fp16)
    name = info.get("Kernel Name", "")
    flag_gemm_without_flops(d, name)
    gpu = launch.metrics.get("device__attribute_display_name", ("", ""))[1] or None
    grid, block = _dims(info.get("Grid Size", "")), _dims(info.get("Block Size", ""))
    dims = {}
    for axis, i in (("x", 0), ("y", 1), ("z", 2)):
        dims[f"grid_{axis}"] = _int(values, f"launch__grid_dim_{axis}") or grid[i]
        dims[f"block_{axis}"] = _int(values, f"launch__block_dim_{axis}") or block[i]
    path_, stack, domain = nvtx_stack(info.get(NVTX_PUSH_POP, ""))
    row = {
        "run_id": run_id,
        "kernel_id": kernel_id,
        "action_idx": kernel_id,
        "name": name,
        "short_name": base_name(name),
        **dims,
        **{k.removeprefix("launch__"): _int(values, k, label) for k, label in LAUNCH_LABELS.items()},
        "shared_mem_static_bytes": _int(values, "launch__shared_mem_per_block_static"),
        "shared_mem_dynamic_bytes": _int(values, "launch__shared_mem_per_block_dynamic"),
        "device_id": _int(values, "launch__device_id", "device__attribute_device_index")
        if info.get("Device", "") == ""
        else int(info["Device"]),
        "context_id": int(info["Context"]) if info.get("Context", "").isdigit() else None,
        "stream_id": int(info["Stream"]) if info.get("Stream", "").isdigit() else None,
        "gpu_name": gpu,
        "compute_capability": cc_str,
        "nvtx_path": path_,
        "nvtx_stack": stack,
        "nvtx_domain": domain,
        "attribution": "push_pop" if path_ else "no_range_open",
        "duration_ns": d.duration_ns,
        **d.quantities,
        "provenance": list(d.provenance.items()),
        "flags": d.flags,
    }
    # the export's "(x, y, z)" columns when no launch__ metric gives the size
    for what, xyz in (("block", block), ("grid", grid)):
        if row[f"{what}_size"] is None and all(v is not None for v in xyz):
            row[f"{what}_size"] = math.prod(v for v in xyz if v is not None)
    return row, _ceiling_rows(d.ceilings, values, run_id, kernel_id, gpu, cc_str)


def _ceiling_rows(
    ceilings: list[Any],
    values: dict[str, float],
    run_id: str,
    kernel_id: int,
    gpu: str | None,
    cc: str | None,
) -> list[dict[str, Any]]:
    """``ceilings`` rows of one launch: the report's peaks at the launch's clocks (source 'ncu-report')."""
    clock = values.get("sm__cycles_elapsed.avg.per_second")
    mhz = "?" if clock is None or math.isnan(clock) else f"{clock / 1e6:.0f}MHz"
    return [
        {
            "run_id": run_id,
            "kernel_id": kernel_id,
            "machine_key": f"{gpu}|{cc}|{mhz}",
            "ceiling": ce.ceiling,
            "kind": ce.kind,
            "value": ce.value,
            "unit": "byte/s" if ce.kind == "bandwidth" else "FLOP/s",
            "clock_hz": ce.clock_hz,
            "formula": ce.formula,
            "source": "ncu-report",
        }
        for ce in ceilings
    ]
