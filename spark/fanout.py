"""Ingest fanned out over Spark executors: each task reads its reports with the same reader code as ``rl ingest``
and publishes them into the shared store, with the same dedupe (run id = the file's SHA-256) and the same atomic
publish (``runs`` row last); the driver collects one result per file, as ``rl ingest --json`` prints them.

The per-file function is the caller's (``rooflake.pipeline.ingest_file``): ``rooflake.spark`` sits beside
``rooflake.pipeline`` in the layers (docs/architecture.md §2) and does not import it. Executors need rooflake installed and
the reports and the store at the same paths (a shared file system, or an ``s3://`` store).
"""

from __future__ import annotations

import functools
import json
import resource
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from rooflake.schema import RooflakeError, StoreError
from rooflake.store import Store

RESULT_SCHEMA = "i long, result string"


def _one(ingest_file: Callable[..., Any], path: str, *, root: str, opts: dict[str, Any]) -> dict[str, Any]:
    """One file through ``ingest_file``; its result as a dict (``IngestResult.as_dict``), an error as status
    ``error`` (``store-error`` for the store's), as ``rooflake.pipeline.ingest_paths`` reports them."""
    try:
        out = dict(ingest_file(path, root, **opts).as_dict())
        out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        return out
    except StoreError as e:
        return {"path": path, "run_id": None, "status": "store-error", "error": str(e)}
    except RooflakeError as e:
        return {"path": path, "run_id": None, "status": "error", "error": str(e)}
    except Exception as e:  # noqa: BLE001 - a vendor library choking on a corrupt file must not stop the batch
        return {
            "path": path,
            "run_id": None,
            "status": "error",
            "error": f"{path}: cannot read it ({type(e).__name__}: {e})",
        }


def _task(
    batches: Iterator[pa.RecordBatch], ingest_file: Callable[..., Any], root: str, opts: dict[str, Any]
) -> Iterator[pa.RecordBatch]:
    """An executor's share (``mapInArrow``): each (i, path) row ingested; out (i, result as JSON)."""
    for batch in batches:
        ids, paths = batch.column("i").to_pylist(), batch.column("path").to_pylist()
        results = [json.dumps(_one(ingest_file, p, root=root, opts=opts)) for p in paths]
        yield pa.RecordBatch.from_arrays(
            [pa.array(ids, pa.int64()), pa.array(results, pa.string())], ["i", "result"]
        )


def ingest(
    spark: Any,
    paths: Sequence[str | Path],
    store: Store | str | Path | None,
    ingest_file: Callable[..., Any],
    labels: dict[str, str] | None = None,
    *,
    force: bool = False,
    fp16: str = "ncu",
) -> list[dict[str, Any]]:
    """Ingest report files ``paths`` into ``store`` on ``spark``'s executors, one task per file, each calling
    ``ingest_file(path, store_root, labels=, force=, fp16=)`` (``rooflake.pipeline.ingest_file``). Returns one
    dict per file, in the order of ``paths``, with the fields of ``rl ingest --json`` (``path``, ``run_id``,
    ``status``: ingested | replaced | exists | error, ``kernels``, ``metrics``, ``gpu_name``, ``error``, ...;
    ``peak_rss_mb``: MiB of the executor's Python worker). A bad file is a result with status ``error``; the
    others still go in. Raises :class:`StoreError` when the store cannot be written (checked on the driver first,
    and by any executor that fails to publish)."""
    st = store if isinstance(store, Store) else Store(store)
    if not paths:
        return []
    st.check_writable()
    st.clean_staging()
    opts = {"labels": dict(labels or {}), "force": force, "fp16": fp16}
    rows = [(i, str(p)) for i, p in enumerate(paths)]
    if type(spark).__module__.startswith(
        "pyspark.sql.connect"
    ):  # Spark Connect: no RDDs; pandas comes with it
        df = spark.createDataFrame(rows, "i long, path string").repartitionByRange(len(rows), "i")
        task = functools.partial(_task, ingest_file=ingest_file, root=str(st.root), opts=opts)
        got = [(r["i"], json.loads(r["result"])) for r in df.mapInArrow(task, RESULT_SCHEMA).collect()]
    else:  # classic: an RDD of one file per partition (mapInArrow would need pandas)
        one = functools.partial(_one, ingest_file, root=str(st.root), opts=opts)
        rdd = spark.sparkContext.parallelize(rows, len(rows))
        got = rdd.map(lambda row: (row[0], one(row[1]))).collect()
    results = [res for _, res in sorted(got, key=lambda r: r[0])]
    bad = next((r for r in results if r["status"] == "store-error"), None)
    if bad is not None:
        raise StoreError(bad["error"] or "store error")
    return results
