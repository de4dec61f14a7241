"""``rl ingest A B --merge``: the two halves of a split NERSC-method profile (time + DRAM bytes in one profiler run,
SASS FLOP counters in another) published as one run, joined per kernel launch by :func:`rooflake.ingest.merge.merge`.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa

from rooflake.ingest import detect_format, file_sha256, read
from rooflake.ingest.merge import merge
from rooflake.ingest.messages import path_text
from rooflake.pipeline import IngestResult, rooflake_version
from rooflake.schema import RUNS, SCHEMA_VERSION, BadArgument, InputError
from rooflake.store import Store

MERGEABLE = ("ncu-rep", "ncu-csv")


def ingest_merged(
    paths: list[Path],
    store_root: str | Path | None,
    labels: dict[str, str] | None = None,
    *,
    force: bool = False,
    fp16: str = "ncu",
) -> IngestResult:
    """Read two Nsight Compute files (``.ncu-rep`` or CSV exports, in any order) and publish them as one run.

    The run id is the first 16 hex digits of the SHA-256 of the two files' SHA-256s (sorted), so the same pair is
    the same run; ``source_path`` names both files (`` + ``), ``source_bytes`` is their sum, and the result's note
    says how launches were matched. Raises :class:`BadArgument` for other than two files, :class:`InputError` for a
    file no ncu reader reads or halves with no launch in common, :class:`StoreError` for an unwritable store.
    """
    if len(paths) != 2:
        raise BadArgument(f"--merge joins the two halves of one split profile; got {len(paths)} files")
    for p in paths:
        if (fmt := detect_format(p)) not in MERGEABLE:
            raise InputError(f"{p}: --merge joins Nsight Compute reports or CSV exports, not {fmt} files")
    shas = [file_sha256(p) for p in paths]
    run_id = hashlib.sha256("".join(sorted(shas)).encode()).hexdigest()[:16]
    store = Store(store_root)
    if store.has_run(run_id) and not force:
        return IngestResult(" + ".join(map(str, paths)), run_id, "exists")
    parts = [read(p, run_id=run_id, fp16=fp16) for p in paths]
    out = merge(parts, [p.name for p in paths], run_id=run_id, fp16=fp16)
    row = {
        **out["run"],
        "run_id": run_id,
        "source_path": " + ".join(path_text(p.resolve()) for p in paths),
        "source_sha256": hashlib.sha256("".join(sorted(shas)).encode()).hexdigest(),
        "source_bytes": sum(p.stat().st_size for p in paths),
        "ingested_at": datetime.now(timezone.utc),
        "labels": sorted((labels or {}).items()),
        "rooflake_version": rooflake_version(),
        "schema_version": SCHEMA_VERSION,
    }
    runs = pa.table({f.name: [row.get(f.name)] for f in RUNS}, schema=RUNS)
    tables = {name: out[name] for name in ("kernels", "metrics", "ceilings")}
    res = store.publish(run_id, {**tables, "runs": runs}, force=force)
    run = out["run"]
    return IngestResult(
        row["source_path"],
        run_id,
        res.status,
        run["n_kernels"],
        run["n_metrics"],
        run["gpu_name"],
        note=run["note"],
    )
