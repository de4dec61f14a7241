"""Reader for the measured-ceilings JSON that ``rl ceilings measure`` writes (:mod:`rooflake.instrument.ceilings`).

Entry point: :func:`read`. The document is recognised by its ``"rooflake_measured_ceilings"`` key (its first key
as written). Every entry of ``ceilings`` becomes one ``ceilings`` row with ``source = 'measured'``, the method
(how it was measured, with the formula) in ``formula``, the measurement time in ``measured_at`` and the entry's
details (threads, sizes, best time) as JSON in ``details``; the run holds no kernels.
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from rooflake.ingest.messages import shown
from rooflake.schema import CEILINGS, InputError

SOURCE_FORMAT = "measured-json"
FORMAT_KEY = "rooflake_measured_ceilings"
KINDS = {"compute": "FLOP/s", "bandwidth": "byte/s", "latency": "s"}


def sniff(head: bytes) -> bool:
    """Whether ``head`` (a file's first bytes) starts like a measured-ceilings document: a JSON object naming
    ``rooflake_measured_ceilings`` near its start."""
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    return text.startswith(b"{") and f'"{FORMAT_KEY}"'.encode() in head[:1024]


def _measured_at(path: Path, doc: dict[str, Any]) -> datetime:
    try:
        when = datetime.fromisoformat(str(doc.get("measured_at")))
    except ValueError as e:
        raise InputError(
            f"{shown(path)}: measured_at {doc.get('measured_at')!r} is not an ISO-8601 time"
        ) from e
    if when.tzinfo is None:
        raise InputError(f"{shown(path)}: measured_at {doc.get('measured_at')!r} has no time zone")
    return when


def _row(path: Path, i: int, e: Any, run_id: str, when: datetime) -> dict[str, Any]:
    where = f"{shown(path)}: ceilings[{i}]"
    if not isinstance(e, dict):
        raise InputError(f"{where} is not an object")
    kind, value = e.get("kind"), e.get("value")
    if kind not in KINDS or e.get("unit") != KINDS[kind]:
        raise InputError(
            f"{where}: kind/unit {kind!r}/{e.get('unit')!r} (compute FLOP/s, bandwidth byte/s, latency s)"
        )
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise InputError(f"{where}: value {value!r} is not a positive number")
    for key in ("ceiling", "machine_key", "method"):
        if not isinstance(e.get(key), str) or not e[key]:
            raise InputError(f"{where}: no {key}")
    return {
        "run_id": run_id,
        "kernel_id": None,
        "machine_key": e["machine_key"],
        "ceiling": e["ceiling"],
        "kind": kind,
        "value": float(value),
        "unit": KINDS[kind],
        "clock_hz": None,
        "formula": e["method"],
        "source": "measured",
        "source_name": e.get("source_name"),
        "measured_at": when,
        "details": json.dumps(e.get("details") or {}, sort_keys=True),
    }


def read(path: str | Path, *, run_id: str, fp16: str = "ncu") -> dict[str, Any]:
    """Read one measured-ceilings document.

    Returns ``{"ceilings": pa.Table (schema CEILINGS: one row per entry; kernel_id and clock_hz NULL, value in
    FLOP/s, byte/s or s, source 'measured', formula = the entry's method, source_name, measured_at, details JSON),
    "run": dict (source_format 'measured-json', producer 'rooflake ceilings measure (torch <version>)',
    command_line, host, n_kernels 0, n_metrics 0, note)}``. ``fp16`` is ignored.
    Raises :class:`InputError` for invalid JSON, an unknown format version, a missing or naive ``measured_at``, and
    entries without a positive value, a known kind and unit, a ceiling name, machine key or method.
    """
    path = Path(path)
    try:
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError) as e:
        raise InputError(f"{shown(path)}: not a readable measured-ceilings JSON ({e})") from e
    if not isinstance(doc, dict) or doc.get(FORMAT_KEY) != 1:
        raise InputError(f"{shown(path)}: not a measured-ceilings document of version 1 ({FORMAT_KEY!r} = 1)")
    entries = doc.get("ceilings")
    if not isinstance(entries, list) or not entries:
        raise InputError(f"{shown(path)}: no ceilings in the document")
    when = _measured_at(path, doc)
    rows = [_row(path, i, e, run_id, when) for i, e in enumerate(entries)]
    names = ", ".join(sorted({r["ceiling"] for r in rows}))
    return {
        "ceilings": pa.table({f.name: [r.get(f.name) for r in rows] for f in CEILINGS}, schema=CEILINGS),
        "run": {
            "source_format": SOURCE_FORMAT,
            "producer": f"rooflake ceilings measure (torch {doc.get('torch', 'unknown')})",
            "command_line": doc.get("command_line"),
            "host": doc.get("host"),
            "gpu_name": None,
            "compute_capability": None,
            "n_kernels": 0,
            "n_metrics": 0,
            "derivation": None,
            "fp16_convention": None,
            "note": f"{len(rows)} measured ceilings ({doc.get('device', '?')}): {names}",
        },
    }
