"""The Parquet store: layout, atomic publish, dedupe, listing runs, and a DuckDB connection with one view per table.

Eight tables (``rooflake.schema.TABLES`` declares their columns): ``runs`` (one row per ingested file or computed
run), ``kernels``, ``metrics``, ``ceilings`` (Nsight Compute, ERT, ncu CSV), ``ranges``, ``memops``, ``coverage``
(Nsight Systems, torch traces), ``estimates`` (a model's analytic per-op estimates, ``rl estimate``).
Layout (DESIGN.md section 3), table first, Hive-partitioned, ``run_id`` also kept inside each file::

    STORE/<table>/run_id=<id>/part-0.parquet
    STORE/.staging/<id>.<pid>.<nonce>/            a run being written
    STORE/.lock                                   held (flock) only while renaming into place

A run exists once its ``runs`` file exists; it is renamed into place last, and views only show rows whose run has
a ``runs`` row, so a crash never leaves a half-run visible, and a ``--force`` re-ingest never hides the run.

Modules: :mod:`~rooflake.store.layout` (paths), :mod:`~rooflake.store.publish` (atomic publish, crash clean-up),
:mod:`~rooflake.store.database` (the DuckDB views, read-only by default), :mod:`~rooflake.store.doctor` (damaged
files). :class:`Store` is the public face of all four.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa

from rooflake.schema import RunNotFoundError
from rooflake.schema.duck import DuckTable, sql_file
from rooflake.store import database, doctor, layout, publish
from rooflake.store.database import refuse_writes, run_read_only
from rooflake.store.layout import ALL_TABLES, DATA_TABLES, STAGING, default_root
from rooflake.store.publish import PublishResult

__all__ = [
    "ALL_TABLES",
    "DATA_TABLES",
    "STAGING",
    "PublishResult",
    "Store",
    "default_root",
    "refuse_writes",
    "run_read_only",
]


class Store:
    """A rooflake store rooted at ``root`` (created on first write)."""

    def __init__(self, root: str | Path | None = None, *, only_runs: list[str] | None = None) -> None:
        """``only_runs``: views read just these runs' files (a report over 100 of 1,000 runs binds 100 files per
        query, not 1,000); None = every run. Raises :class:`StoreError` for a root with a glob character or a root
        that is a file."""
        self.root = Path(root) if root is not None else default_root()
        self.only_runs = sorted(set(only_runs)) if only_runs is not None else None
        layout.check_root(self.root)
        self._db: tuple[tuple[Any, ...], Any] | None = None

    # ---- paths -------------------------------------------------------------------------------------------
    def partition(self, table: str, run_id: str) -> Path:
        """Folder of ``table``'s partition of run ``run_id``."""
        return layout.partition(self.root, table, run_id)

    def glob(self, table: str) -> str:
        """Glob of ``table``'s files (``STORE/<table>/*/*.parquet``)."""
        return layout.table_glob(self.root, table)

    def has_run(self, run_id: str) -> bool:
        """Whether run ``run_id`` is published (its ``runs`` file exists)."""
        return (self.partition("runs", run_id) / layout.PART).exists()

    def run_ids(self) -> list[str]:
        """Sorted ids of the published runs."""
        return layout.run_ids(self.root)

    def resolve(self, prefix: str | None) -> str:
        """The full run id that ``prefix`` names; None names the latest ingested run. Raises
        :class:`RunNotFoundError` if none or several match (or the store holds no runs)."""
        if prefix is None:
            rows = self.connect().execute(sql_file("rooflake.store", "latest_run.sql")).fetchall()
            if not rows:
                raise RunNotFoundError(f"store {self.root} holds no runs (ingest one with `rl ingest FILE`)")
            return str(rows[0][0])
        ids = [r for r in self.run_ids() if r.startswith(prefix)]
        if len(ids) == 1:
            return ids[0]
        if not ids:
            raise RunNotFoundError(f"no run {prefix!r} in store {self.root} (see `rl runs`)")
        raise RunNotFoundError(
            f"run id prefix {prefix!r} matches {len(ids)} runs in {self.root}: {', '.join(ids)}"
        )

    # ---- writing -----------------------------------------------------------------------------------------
    def check_writable(self) -> None:
        """Raise :class:`StoreError` unless the store (or, before it exists, its nearest existing parent) can be
        written. Creates nothing."""
        layout.check_writable(self.root)

    def clean_staging(self) -> int:
        """Remove staging folders of dead (or zombie) writers, rolling back a swap one was killed in. Returns how
        many folders were removed."""
        return publish.clean_staging(self.root)

    def publish(
        self, run_id: str, tables: dict[str, pa.Table | DuckTable], *, force: bool = False
    ) -> PublishResult:
        """Write one run atomically: stage every table, fsync, rename into place, ``runs`` last (see
        :func:`rooflake.store.publish.publish`). ``tables`` must hold ``runs``; an absent or empty data table
        writes no file. If the run exists and not ``force``, nothing is written (status ``exists``). Raises
        :class:`StoreError` when the store cannot be written; the store is then as before."""
        return publish.publish(self.root, run_id, tables, force=force)

    # ---- reading -----------------------------------------------------------------------------------------
    def connect(
        self,
        extra_views: dict[str, str] | None = None,
        setup: str = "",
        *,
        after: str = "",
        unsafe: bool = False,
    ) -> Any:  # -> duckdb.DuckDBPyConnection
        """A cursor on this store's DuckDB database (:func:`rooflake.store.database.build`): views ``runs``,
        ``kernels``, ``metrics``, ``ceilings``, ``ranges``, ``memops``, ``coverage``, ``estimates``, then ``extra_views``; ``setup``
        (the queries' macros) is run first, ``after`` (the queries' table macros, which bind to the views) last.
        Unless ``unsafe``, the database reads the store's files and nothing
        else, and its settings are locked (no ``COPY … TO``, ``ATTACH``, ``INSTALL``). The database is built once
        per Store object and rebuilt when runs or tables appear or disappear: binding the views' globs costs
        ~0.25 s at 1,000 runs, a cursor nothing."""
        runs_dir = self.root / "runs"
        key = (
            tuple(self.only_runs or ()),
            tuple(layout.has_files(self.root, t) for t in ALL_TABLES),
            len(os.listdir(runs_dir)) if runs_dir.is_dir() else 0,
            tuple(sorted((extra_views or {}).items())),
            setup,
            after,
            unsafe,
        )
        if self._db is None or self._db[0] != key:
            con = database.build(self.root, self.only_runs, extra_views, setup, after=after, unsafe=unsafe)
            self._db = (key, con)
        return self._db[1].cursor()

    def query(
        self,
        sql: str,
        params: dict[str, Any] | None = None,
        *,
        extra_views: dict[str, str] | None = None,
        setup: str = "",
        unsafe: bool = False,
    ) -> pa.Table:
        """Run a user's SQL over the store's views (and ``extra_views``); the result as a ``pyarrow.Table`` with the
        columns the SQL selects. Unless ``unsafe``, only queries run (``SELECT``, ``EXPLAIN``: see
        :func:`rooflake.store.database.refuse_writes`) on a locked-down database. Raises :class:`QueryError`
        with DuckDB's message on one line (a damaged file is named in it)."""
        con = self.connect(extra_views, setup, unsafe=unsafe)
        return run_read_only(con, sql, params, unsafe=unsafe)

    def doctor(self) -> pa.Table:
        """Every problem with the store's files, one row each (none: healthy). Columns: ``table``, ``run_id``,
        ``path``, ``problem`` (damaged | missing | unpublished | stale-staging), ``error`` — see
        :func:`rooflake.store.doctor.doctor`."""
        return doctor.doctor(self.root)
