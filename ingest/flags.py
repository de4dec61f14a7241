"""The flags of suspicious source rows that the readers of GPU operation traces set (Nsight Systems:
``nsys/launches.sql``, ``nsys/ranges.sql``; torch.profiler traces: :mod:`rooflake.ingest.torch_trace`), what each
means, and the ingest summary's lines about them (:func:`flag_summary`)."""

from __future__ import annotations

from typing import Any

# the flags of suspicious source rows, in the order of the warnings, each with what it means
FLAGS = {
    "null_start": "no start time",
    "null_end": "no end time (duration unknown)",
    "reversed_time": "end before start",
    "negative_time": "negative timestamp",
    "duplicate_correlation_id": "correlation id shared with another GPU operation of the process",
    "duplicate_launch_call": "several launch calls with that correlation id (the first one is used)",
}
_NOUNS = {"kernels": ("kernel", "kernels"), "memops": ("memcpy/memset", "memcpys/memsets"),
          "ranges": ("NVTX range", "NVTX ranges")}  # fmt: skip


def flag_summary(counts: list[tuple[str, str, int]]) -> dict[str, Any]:
    """The ingest summary's part about suspicious source rows, from ``(table, flag, rows)`` counts:
    ``flag_counts`` = {table: {flag: rows}} (only non-zero ones) and ``warnings``, one line per table and flag
    (e.g. ``2 kernels: end before start (flag reversed_time)``), tables in the order kernels, memops, ranges."""
    out: dict[str, dict[str, int]] = {}
    for table, flag, n in counts:
        out.setdefault(table, {})[flag] = n
    warnings = []
    for table, (one, many) in _NOUNS.items():
        for flag, what in FLAGS.items():
            n = out.get(table, {}).get(flag, 0)
            if n:
                nested = table == "ranges" and flag in ("null_start", "reversed_time")
                what += ", left out of the nesting (push/pop ranges: no depth, no parent)" if nested else ""
                warnings.append(f"{n} {one if n == 1 else many}: {what} (flag {flag})")
    return {"flag_counts": out, "warnings": warnings}
