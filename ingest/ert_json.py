"""Reader for the Empirical Roofline Toolkit's ``roofline.json`` (ERT 1.x, Berkeley Lab CS Roofline Toolkit).

Entry point: :func:`read`. The file holds ``empirical`` (measured) and ``spec`` (typed-in specification) sections,
each with ``gflops`` and ``gbytes`` lists of ``[name, value]`` pairs and their ``metadata``. Every pair becomes one
``ceilings`` row (``source = 'ert'`` for empirical, ``'ert-spec'`` for spec) with the name kept verbatim in
``source_name``; the run holds no kernels.

- Values: ERT prints GFLOP/s and GB/s in units of 10^9 (its driver divides bytes and FLOPs by 1e9); stored in
  FLOP/s and byte/s.
- Memory levels: free text mapped to rooflake's levels (``L1``, ``L2``, ``DRAM``; ``HBM``/``GDDR``/``DDR`` are the
  device memory, ``DRAM``); levels rooflake has no name for (``L3``, ``MCDRAM``) keep their own upper-case name.
  A second entry that maps to a level already taken keeps its own name (KNL: ``DRAM`` and ``MCDRAM``); a name
  taken too (``L1`` listed twice) gets ``_`` appended (``L1_``), as a FLOP name does.
- FLOP labels: ``FP64 GFLOPs``, ``FP32 GFLOPs``, ... name the precision; ERT 1.1.0 writes only ``GFLOPs``: its
  kernels compute in ``double`` (``Drivers/driver1.c`` allocates ``double`` buffers), so the precision is FP64
  unless the config's ``ERT_PRECISION`` names another. Several entries of one precision (``FP64 Vector GFLOPs
  FMA``, ``FP64 Scalar GFLOPs``, ...): the highest is the roof (``FP64``), the others are ceilings below it
  named by their qualifiers (``FP64_SCALAR``).
- Metadata comes as a JSON object (``{"FLOPS": 64, "TIMESTAMP_DATA": [...]}``) or as ERT's text lines
  (``{"": ["FLOPS          1024", "ERT_VERSION  1.1.0", ...]}``); both are read.
"""

from __future__ import annotations

import ast
import json
import math
import re
from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa

from rooflake.ingest.messages import shown
from rooflake.schema import CEILINGS, InputError

SOURCE_FORMAT = "ert-json"
# free-text ERT level names -> rooflake memory level
LEVELS = {
    "L1": "L1",
    "L2": "L2",
    "DRAM": "DRAM",
    "HBM": "DRAM",
    "HBM2": "DRAM",
    "HBM2E": "DRAM",
    "HBM3": "DRAM",
    "GDDR": "DRAM",
    "GDDR5": "DRAM",
    "GDDR6": "DRAM",
    "DDR": "DRAM",
    "DDR4": "DRAM",
    "DDR5": "DRAM",
}
PRECISIONS = {"FP64": "FP64", "DP": "FP64", "FP32": "FP32", "SP": "FP32", "FP16": "FP16", "HP": "FP16"}
PRECISIONS.update({p: p for p in ("BF16", "TF32", "FP8", "INT8")})
_FLOP_RE = re.compile(r"^\s*(?:(\w+)\s+)?(.*?)\s*GFLOP/?s\s*(.*?)\s*$", re.IGNORECASE)
GIGA = Decimal(10**9)  # exact decimal scaling: 4258.4 GFLOP/s is 4258400000000.0 FLOP/s, not ...99.9995


def sniff(head: bytes) -> bool:
    """Whether ``head`` (a file's first bytes) starts like an ERT ``roofline.json``: a JSON object whose text
    names the ``empirical`` section near its start."""
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    return text.startswith(b"{") and b'"empirical"' in head[:4096]


def read(path: str | Path, *, run_id: str, fp16: str = "ncu") -> dict[str, Any]:
    """Read one ERT ``roofline.json``.

    Returns ``{"ceilings": pa.Table (schema CEILINGS: one row per ERT entry; kernel_id NULL, value in FLOP/s or
    byte/s, source 'ert' or 'ert-spec', source_name the entry's text, measured_at its section's TIMESTAMP_DATA,
    details JSON of the section's metadata), "run": dict (source_format 'ert-json', producer 'ERT <version>',
    command_line ERT_RUN, host, n_kernels 0, n_metrics 0, note)}``. ``fp16`` is ignored (no FLOP counts).
    Raises :class:`InputError` for invalid JSON, a file without an ``empirical`` object, entries that are not
    ``[name, number]`` pairs, or no entries at all.
    """
    path = Path(path)
    try:
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError) as e:
        raise InputError(f"{shown(path)}: not a readable ERT roofline.json ({e})") from e
    if not isinstance(doc, dict) or not isinstance(doc.get("empirical"), dict):
        raise InputError(f"{shown(path)}: not an ERT roofline.json (no 'empirical' object at the top level)")
    top = _metadata(doc["empirical"].get("metadata"))
    meta = dict(top)
    for part in (v for k, v in doc["empirical"].items() if k in ("gflops", "gbytes")):  # file order
        for key, value in (_metadata(part.get("metadata")) if isinstance(part, dict) else {}).items():
            meta.setdefault(key, value)
    host = _host(meta.get("HOSTNAME") or meta.get("NERSC_HOST"))
    rows: list[dict[str, Any]] = []
    for section, source in (("empirical", "ert"), ("spec", "ert-spec")):
        part = doc.get(section)
        if isinstance(part, dict):
            rows += _section(path, part, source, top, run_id, host)
    if not rows:
        raise InputError(
            f"{shown(path)}: the ERT file holds no gflops or gbytes entries (an unfinished ERT run?)"
        )
    version = meta.get("ERT_VERSION")
    cmd = (meta.get("CONFIG") or {}).get("ERT_RUN")
    names = ", ".join(f"{r['ceiling']}" for r in rows if r["source"] == "ert")
    return {
        "ceilings": pa.table({f.name: [r.get(f.name) for r in rows] for f in CEILINGS}, schema=CEILINGS),
        "run": {
            "source_format": SOURCE_FORMAT,
            "producer": f"ERT {version}" if version else "ERT (version not recorded)",
            "command_line": " ".join(str(x) for x in cmd) if isinstance(cmd, list) else None,
            "host": str(host) if host else None,
            "gpu_name": None,
            "compute_capability": None,
            "n_kernels": 0,
            "n_metrics": 0,
            "derivation": None,
            "fp16_convention": None,
            "note": f"{len(rows)} ERT ceilings: {names}",
        },
    }


def _section(
    path: Path, part: dict[str, Any], source: str, top: dict[str, Any], run_id: str, host: str | None
) -> list[dict[str, Any]]:
    """Ceiling rows of one section (``empirical`` or ``spec``): its gbytes, then its gflops entries."""
    rows: list[dict[str, Any]] = []
    for key, kind in (("gbytes", "bandwidth"), ("gflops", "compute")):
        block = part.get(key)
        if not isinstance(block, dict):
            continue
        meta = _metadata(block.get("metadata"))
        entries = _entries(path, f"{source}.{key}", block.get("data") or [])
        names = _level_names(entries) if kind == "bandwidth" else _flop_names(entries, {**top, **meta})
        details = json.dumps({k: v for k, v in meta.items() if k != "CONFIG"}, sort_keys=True, default=str)
        for (text, value), name in zip(entries, names, strict=True):
            unit = "byte/s" if kind == "bandwidth" else "FLOP/s"
            rows.append(
                {
                    "run_id": run_id,
                    "kernel_id": None,
                    "machine_key": host,
                    "ceiling": name,
                    "kind": kind,
                    "value": float(Decimal(repr(value)) * GIGA),
                    "unit": unit,
                    "clock_hz": None,
                    "formula": f"ERT {source.removeprefix('ert').strip('-') or 'empirical'} "
                    f"{'GB/s' if kind == 'bandwidth' else 'GFLOP/s'} x 1e9",
                    "source": source,
                    "source_name": text,
                    "measured_at": _timestamp(meta),
                    "details": details,
                }
            )
    return rows


def _entries(path: Path, where: str, data: Any) -> list[tuple[str, float]]:
    if not isinstance(data, list):
        raise InputError(f"{shown(path)}: {where}.data is not a list of [name, value] pairs")
    out = []
    for i, e in enumerate(data):
        ok = isinstance(e, list) and len(e) >= 2 and isinstance(e[0], str)
        value = e[1] if ok else None
        if (
            not ok
            or isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
        ):
            raise InputError(f"{shown(path)}: {where}.data[{i}] is not a [name, number] pair: {e!r}")
        # a ceiling is positive, and finite once in byte/s or FLOP/s
        if value <= 0 or not math.isfinite(value * 1e9):
            raise InputError(
                f"{shown(path)}: {where}.data[{i}]: {value!r} is not a positive, finite rate: {e!r}"
            )
        out.append((e[0], float(value)))
    return out


def _level_names(entries: list[tuple[str, float]]) -> list[str]:
    """rooflake level of each ERT memory entry; a level already taken keeps the entry's own name, and a name
    taken too (a level listed twice) gets ``_`` appended until it is not, as :func:`_flop_names` does: one ceiling
    per name in a run, each entry kept."""
    out: list[str] = []
    for text, _ in entries:
        own = re.sub(r"\W+", "_", text.strip().upper()).strip("_") or "MEMORY"
        level = LEVELS.get(own, own)
        name = own if level in out else level
        while name in out:
            name += "_"
        out.append(name)
    return out


def _flop_names(entries: list[tuple[str, float]], meta: dict[str, Any]) -> list[str]:
    """Ceiling name of each FLOP entry: the precision for the highest of its precision, precision_QUALIFIERS
    for the lower ceilings (``FP64 Scalar GFLOPs FMA`` -> ``FP64_SCALAR_FMA``)."""
    config = meta.get("CONFIG") or {}
    default = "FP64"
    prec = config.get("ERT_PRECISION") if isinstance(config, dict) else None
    if isinstance(prec, list) and len(prec) == 1 and str(prec[0]).upper() in PRECISIONS:
        default = PRECISIONS[str(prec[0]).upper()]
    parsed = []
    for text, value in entries:
        m = _FLOP_RE.match(text)
        word, before, after = (m.group(1) or "", m.group(2), m.group(3)) if m else ("", text, "")
        if word.upper() in PRECISIONS:
            precision = PRECISIONS[word.upper()]
        else:
            precision, before = default, f"{word} {before}"
        qual = re.sub(r"\W+", "_", f"{before} {after}".strip().upper()).strip("_")
        parsed.append((precision, qual, value))
    best = {p: max(v for q, _, v in parsed if q == p) for p, _, _ in parsed}
    out: list[str] = []
    for precision, qual, value in parsed:
        name = precision if value == best[precision] and precision not in out else f"{precision}_{qual}"
        while name in out:
            name += "_"
        out.append(name)
    return out


def _metadata(meta: Any) -> dict[str, Any]:
    """ERT metadata as a dict: JSON objects as they are, ERT's text lines (``"KEY  value"``) parsed; values that
    are Python literals (ERT writes reprs) are evaluated safely."""
    if not isinstance(meta, dict):
        return {}
    out = {k: v for k, v in meta.items() if k}
    for line in meta.get("", []) if isinstance(meta.get(""), list) else []:
        key, _, value = str(line).strip().partition(" ")
        if not key or key == "META_DATA":
            continue
        value = value.strip()
        try:
            out[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            out[key] = value
    return out


def _host(h: Any) -> str | None:
    """Host name from ERT's HOSTNAME (``socket.gethostbyaddr`` tuple, as a list or as its repr text)."""
    if isinstance(h, (list, tuple)) and h:
        return str(h[0])
    if isinstance(h, str):
        return h
    return None


def _timestamp(meta: dict[str, Any]) -> datetime | None:
    """Latest TIMESTAMP_DATA of a section (one per experiment), else TIMESTAMP_DB, as UTC."""
    for key in ("TIMESTAMP_DATA", "TIMESTAMP_DB"):
        t = meta.get(key)
        values = t if isinstance(t, list) else [t]
        nums = [float(x) for x in values if isinstance(x, (int, float)) and not isinstance(x, bool)]
        if nums:
            return datetime.fromtimestamp(max(nums), tz=timezone.utc)
    return None
