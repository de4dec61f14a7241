"""``rl ingest EXEC --capture CAPTURE``: a torch.profiler execution trace whose kernels are replayed from CUDA graphs,
published as one run with the ops of the trace that captured those graphs (:mod:`rooflake.ingest.graphs`)."""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rooflake.ingest import detect_format, file_sha256
from rooflake.ingest.messages import path_text, shown
from rooflake.ingest.ranks import labelled_rank
from rooflake.pipeline import IngestResult, rooflake_version
from rooflake.schema import InputError
from rooflake.store import Store


def ingest_captured(
    path: str | Path,
    capture: str | Path,
    store_root: str | Path | None,
    labels: dict[str, str] | None = None,
    *,
    force: bool = False,
    gpu: str | None = None,
) -> IngestResult:
    """Read the execution trace ``path`` and the capture trace ``capture`` (both torch.profiler traces) and publish
    the execution run with its replayed kernels matched to the captured ops (``graph_kernels``, replayed rows in
    ``ops``). The run id is the first 16 hex digits of the SHA-256 of the two files' SHA-256s (execution first): the
    pair is one run, apart from the execution trace ingested alone; ``source_path`` names the execution trace, the
    ingest summary the capture. Raises :class:`InputError` for a file that is not a torch.profiler trace or a
    capture without a graph capture; the store is then unchanged. ``gpu``: as
    :func:`rooflake.pipeline.ingest_file`'s, for both traces."""
    from rooflake.ingest import ops, torch_trace
    from rooflake.ingest.graphs import with_capture

    ranked = labelled_rank(labels, path)
    path, capture = Path(path), Path(capture)
    for p, what in ((path, "the execution trace"), (capture, "--capture")):
        if detect_format(p) != "torch-trace":
            raise InputError(
                f"{shown(p)}: {what} must be a torch.profiler trace (CUDA graphs are matched in those)"
            )
    sha, cap_sha = file_sha256(path), file_sha256(capture)
    combined = hashlib.sha256((sha + cap_sha).encode()).hexdigest()
    run_id = combined[:16]
    store = Store(store_root)
    if store.has_run(run_id) and not force:
        return IngestResult(str(path), run_id, "exists")
    with ops.given_gpu_for(gpu):
        out = ops.with_ops(torch_trace.read(path, run_id=run_id), run_id, replay_note=False)
        out = with_capture(out, capture, run_id)
    res = store.publish(
        run_id, {**_tables(out), "runs": _runs(out["run"], path, combined, labels, ranked)}, force=force
    )
    run = out["run"]
    return IngestResult(
        str(path), run_id, res.status, run["n_kernels"], run["n_metrics"], run["gpu_name"],
        ranges=out["ranges"].num_rows, warnings=run.get("warnings") or None,
    )  # fmt: skip


def _tables(out: dict[str, Any]) -> dict[str, Any]:
    import pyarrow as pa

    return {name: t for name, t in out.items() if isinstance(t, pa.Table)}


def _runs(
    run: dict[str, Any], path: Path, sha: str, labels: dict[str, str] | None, ranked: dict[str, Any]
) -> Any:
    """The run's ``runs`` row (pa.Table) for the execution trace ``path``, ``sha`` the pair's SHA-256."""
    import pyarrow as pa

    from rooflake.schema import RUNS, SCHEMA_VERSION

    row = {
        **run,
        "run_id": sha[:16],
        "source_path": path_text(path.resolve()),
        "source_sha256": sha,
        "source_bytes": path.stat().st_size,
        "ingested_at": datetime.now(timezone.utc),
        "labels": sorted((labels or {}).items()),
        "rooflake_version": rooflake_version(),
        "schema_version": SCHEMA_VERSION,
        **ranked,
    }
    return pa.table({f.name: [row.get(f.name)] for f in RUNS}, schema=RUNS)
