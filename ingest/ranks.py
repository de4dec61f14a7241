"""Which rank of which distributed job a run is: the ``rank``, ``world_size`` and ``job`` columns of ``runs``.

A torch.profiler (Kineto) trace of a distributed job is one file per rank; its top-level ``distributedInfo``
object says ``{"backend": "nccl", "rank": 0, "world_size": 8, ...}`` (torch's ``_get_distributed_info``). Kineto
writes no job name: the job is the folder the rank files were written to (``tensorboard_trace_handler(dir)``
writes every rank of a job into one ``dir``). Each value can be given at ingest instead (``--label rank=3
--label job=llama-70b``): a label wins over the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rooflake.ingest.messages import shown
from rooflake.schema import InputError

#: the ``runs`` columns a rank's identity fills, which labels of the same names override
RANK_FIELDS = ("rank", "world_size", "job")


def _count(value: Any) -> int | None:
    """A non-negative integer of a trace (an int, or a string of digits), else None (a bool is not one)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def trace_rank(doc: dict[str, Any], path: str | Path) -> dict[str, Any]:
    """``{"rank", "world_size", "job"}`` of a Kineto trace's top-level keys ``doc`` read from ``path``: rank and
    world size from ``distributedInfo`` (None where absent or not a non-negative integer), job = the name of the
    file's folder when the trace names a rank (a single-process trace is no rank of a job: job None)."""
    info = doc.get("distributedInfo")
    info = info if isinstance(info, dict) else {}
    rank, world = _count(info.get("rank")), _count(info.get("world_size"))
    job = Path(path).resolve().parent.name or None if rank is not None else None
    return {"rank": rank, "world_size": world, "job": job}


def labelled_rank(labels: dict[str, str] | None, path: str | Path) -> dict[str, Any]:
    """The ``rank``, ``world_size`` and ``job`` that ``labels`` (``--label k=v``) give for the file ``path``: only
    the keys present. Raises :class:`InputError` naming the file when ``rank`` or ``world_size`` is not a
    non-negative integer, or the rank is not below the world size."""
    out: dict[str, Any] = {}
    for key in ("rank", "world_size"):
        if key in (labels or {}):
            n = _count((labels or {})[key])
            if n is None:
                raise InputError(
                    f"{shown(Path(path))}: --label {key}={(labels or {})[key]!r} is not a non-negative integer "
                    f"(give the {key.replace('_', ' ')} as a number, e.g. --label {key}=0)"
                )
            out[key] = n
    if (labels or {}).get("job"):
        out["job"] = (labels or {})["job"]
    if out.get("rank") is not None and out.get("world_size") is not None and out["rank"] >= out["world_size"]:
        raise InputError(
            f"{shown(Path(path))}: --label rank={out['rank']} is not below --label world_size={out['world_size']}"
        )
    return out
