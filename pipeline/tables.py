"""Publish tables rooflake computed itself (not read from a file) as one run: model estimates, measurements.

The run id is the first 16 hex digits of the SHA-256 of ``identity`` (a canonical description of what was computed:
the model factory, its inputs, dtype, phase and GPU), so computing the same thing twice is a no-op unless ``force``,
as for files.
"""

from __future__ import annotations

import hashlib
import socket
from datetime import datetime, timezone
from typing import Any

import pyarrow as pa

from rooflake.pipeline import IngestResult, rooflake_version
from rooflake.schema import RUNS, SCHEMA_VERSION, UsageError
from rooflake.schema.duck import sql_template
from rooflake.store import Store


def ingest_tables(
    store_root: Any,
    tables: dict[str, pa.Table],
    *,
    identity: str,
    source_format: str,
    producer: str,
    labels: dict[str, str] | None = None,
    run_fields: dict[str, Any] | None = None,
    force: bool = False,
) -> IngestResult:
    """Publish ``tables`` (name → Arrow table with the store's schema, ``run_id`` column filled with any value: it is
    replaced) as one run with ``source_format`` and a ``runs`` row; ``source_path`` is ``identity``.

    Returns an :class:`IngestResult` (status ``ingested``, ``replaced`` or ``exists``: the run is in the store with
    the same rows). Raises :class:`rooflake.schema.UsageError` when the run is in the store with other rows (the
    same identity computed from changed code: ``force`` replaces it), :class:`rooflake.schema.StoreError` when the
    store cannot be written (the store is then unchanged)."""
    digest = hashlib.sha256(identity.encode()).hexdigest()
    run_id = digest[:16]
    store = Store(store_root)
    if store.has_run(run_id) and not force:
        _same_rows(store, run_id, identity, tables)
        return IngestResult(identity, run_id, "exists")
    fixed = {name: _with_run_id(t, run_id) for name, t in tables.items()}
    row = {
        "run_id": run_id,
        "source_path": identity,
        "source_sha256": digest,
        "source_bytes": len(identity.encode()),
        "source_format": source_format,
        "producer": producer,
        "host": socket.gethostname(),
        "n_kernels": 0,
        "n_metrics": 0,
        **(run_fields or {}),
        "ingested_at": datetime.now(timezone.utc),
        "labels": sorted((labels or {}).items()),
        "rooflake_version": rooflake_version(),
        "schema_version": SCHEMA_VERSION,
    }
    runs = pa.Table.from_pylist([{f.name: row.get(f.name) for f in RUNS}], schema=RUNS)
    res = store.publish(run_id, {**fixed, "runs": runs}, force=force)
    return IngestResult(identity, run_id, res.status, 0, 0, row.get("gpu_name"))


def _same_rows(store: Store, run_id: str, identity: str, tables: dict[str, pa.Table]) -> None:
    """Raise :class:`UsageError` unless run ``run_id`` holds in each of ``tables`` the same rows (in any order;
    ``run_id`` left out): an identity names what was computed, not the code that computed it (a model edited since
    its estimate has the same factory, inputs and options)."""
    for name, table in tables.items():
        new = table.drop_columns(["run_id"]).to_pylist()
        stored = store.query(sql_template("rooflake.store", "run_rows.sql", table=name), {"run_id": run_id})
        old = stored.to_pylist()
        if sorted(map(repr, old)) != sorted(map(repr, new)):
            raise UsageError(
                f"{identity}: run {run_id} in the store holds other {name} rows ({len(old)} stored, {len(new)} now: "
                "the code changed since it was computed); --force replaces it"
            )


def _with_run_id(table: pa.Table, run_id: str) -> pa.Table:
    i = table.schema.get_field_index("run_id")
    return table.set_column(i, table.schema.field(i), pa.array([run_id] * table.num_rows, pa.string()))
