"""The Parquet store: layout, atomic publish, dedupe, listing runs, and a DuckDB connection with one view per table.

Eight tables (``rooflake.schema.TABLES`` declares their columns): ``runs`` (one row per ingested file or computed
run), ``kernels``, ``metrics``, ``ceilings`` (Nsight Compute, ERT, ncu CSV), ``ranges``, ``memops``, ``coverage``
(Nsight Systems, torch traces), ``estimates`` (a model's analytic per-op estimates, ``rl estimate``).
Layout (docs/architecture.md section 3), table first, Hive-partitioned, ``run_id`` also kept inside each file::

    STORE/<table>/run_id=<id>/part-0.parquet
    STORE/.staging/<id>.<pid>.<nonce>/            a run being written
    STORE/.lock                                   held (flock) only while renaming into place

A run exists once its ``runs`` file exists; it is renamed into place last, and views only show rows whose run has
a ``runs`` row, so a crash never leaves a half-run visible, and a ``--force`` re-ingest never hides the run.

On object storage (``Store("s3://bucket/prefix")``, :mod:`~rooflake.store.remote`) nothing is renamed: each publish
writes files of a new generation, ``STORE/<table>/run_id=<id>/part-<gen>.parquet``, the ``runs`` file last (its PUT
is the commit), and readers are given the files of each run's committed generation (:meth:`Store.files`).

Modules: :mod:`~rooflake.store.layout` (paths), :mod:`~rooflake.store.publish` (atomic publish, crash clean-up),
:mod:`~rooflake.store.database` (the DuckDB views, read-only by default), :mod:`~rooflake.store.doctor` (damaged
files), :mod:`~rooflake.store.remote` (stores on object storage), :mod:`~rooflake.store.freshness` (whether a
cached database still reads what the store holds). :class:`Store` is the public face of all six.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from rooflake.schema import RunNotFoundError
from rooflake.schema.duck import DuckTable, sql_file
from rooflake.store import database, freshness, layout
from rooflake.store.database import refuse_writes, run_read_only
from rooflake.store.layout import ALL_TABLES, DATA_TABLES, STAGING, default_root

# pyarrow is imported where a table is built or written: reading a store (rl sql, rl runs) needs none, so they start sooner;
# publish and remote where a store is written or on object storage (reading a local store needs neither: ~10 ms)
if TYPE_CHECKING:
    import pyarrow as pa

    from rooflake.store import remote
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


def __getattr__(name: str) -> Any:
    """``PublishResult``, and the submodules ``publish`` and ``remote``, imported when first asked for."""
    import importlib

    if name == "PublishResult":
        return importlib.import_module("rooflake.store.publish").PublishResult
    if name in ("publish", "remote"):
        return importlib.import_module(f"rooflake.store.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _snapshot(url: str, only_runs: list[str] | None) -> remote.Snapshot:
    """The listing of the store on object storage at ``url`` (:meth:`rooflake.store.remote.Snapshot.take`)."""
    from rooflake.store import remote

    return remote.Snapshot.take(url, only_runs)


class Store:
    """A rooflake store rooted at ``root``: a local directory (created on first write) or an object-store URL,
    ``s3://bucket/prefix`` (the bucket must exist; see :mod:`rooflake.store.remote`)."""

    def __init__(self, root: str | Path | None = None, *, only_runs: list[str] | None = None) -> None:
        """``only_runs``: views read just these runs' files (a report over 100 of 1,000 runs binds 100 files per
        query, not 1,000); None = every run. ``root`` None: :func:`default_root` (``$RL_STORE``). Raises
        :class:`StoreError` for a root with a glob character, a root that is a file, or a URL of another scheme
        than ``s3://``."""
        root = root if root is not None else default_root()
        self.url: str | None = None
        if isinstance(root, str) and layout.is_url(root):
            from rooflake.store import remote

            self.url = remote.normalize(root)
        self.root: Path | str = self.url if self.url is not None else Path(root)
        self.only_runs = sorted(set(only_runs)) if only_runs is not None else None
        if self.url is None:
            layout.check_root(self._dir)
        #: the cached database: what it was built from (:meth:`connect`'s arguments and, on object storage, the
        #: listing), what a look at a local store found then (:class:`~rooflake.store.freshness.Seen`), itself
        self._db: tuple[tuple[Any, ...], freshness.Seen | None, Any] | None = None

    @property
    def _dir(self) -> Path:
        """The root of a local store (never called on a remote one)."""
        assert isinstance(self.root, Path), "a local-store operation on a remote store"
        return self.root

    @property
    def is_remote(self) -> bool:
        """Whether the store is on object storage (``root`` is then its URL, a string)."""
        return self.url is not None

    # ---- paths -------------------------------------------------------------------------------------------
    def partition(self, table: str, run_id: str) -> Path | str:
        """Folder of ``table``'s partition of run ``run_id`` (a URL on object storage)."""
        if self.url is not None:
            return f"{self.url}/{table}/run_id={run_id}"
        return layout.partition(self._dir, table, run_id)

    def glob(self, table: str) -> str:
        """Glob of ``table``'s files (``STORE/<table>/*/*.parquet``). On object storage it also matches files no
        reader may use (a publish in flight, a superseded generation): read :meth:`files` there."""
        if self.url is not None:
            return f"{self.url}/{table}/*/*.parquet"
        return layout.table_glob(self._dir, table)

    def files(self, table: str) -> list[str]:
        """Paths (URLs on object storage) of ``table``'s files that hold rows of the published runs (of
        ``only_runs`` when set): the partition file of each run published as a partition, sorted by run id (the
        committed generation on object storage), then the compacted files (``rl compact``) when a run is read from
        them. What DuckDB, polars or Spark should read; their rows still need the runs filter of
        :meth:`published`: a run re-ingested with ``--force`` after a compaction is in both its partition and the
        compacted files, and is read from its partition only (on a local store a run's data files are also moved
        in before its ``runs`` file)."""
        sources = self._sources()
        runs = frozenset(self.only_runs) if self.only_runs is not None else None
        return sources.files(table, "partition", runs) + sources.files(table, "compacted", runs)

    def published(self) -> dict[str, str]:
        """``{run_id: "partition" | "compacted"}``: each published run (of ``only_runs`` when set) and where its
        rows are read from: its own partition files, or the compacted files of :meth:`files`."""
        return dict(self._sources().published)

    def _sources(self) -> database.Sources:
        where: Path | remote.Snapshot = self._dir if self.url is None else _snapshot(self.url, self.only_runs)
        return database.take_sources(where, self.only_runs)

    def storage_options(self) -> dict[str, str]:
        """Options for polars' native reader of :meth:`files` (``pl.scan_parquet(files, storage_options=…)``):
        the S3 endpoint and region from the environment on object storage; empty for a local store."""
        if self.url is None:
            return {}
        from rooflake.store import remote

        return remote.storage_options()

    def has_run(self, run_id: str) -> bool:
        """Whether run ``run_id`` is published (its ``runs`` file exists, or a compaction holds it)."""
        if self.url is not None:
            from rooflake.store import remote

            return remote.is_published(self.url, run_id)
        from rooflake.store import publish

        return publish.is_published(self._dir, run_id)

    def run_ids(self) -> list[str]:
        """Sorted ids of the published runs."""
        if self.url is not None:
            from rooflake.store import remote

            return remote.run_ids(self.url)
        return layout.run_ids(self._dir)

    def resolve(self, prefix: str | None) -> str:
        """The full run id that ``prefix`` names; None names the latest ingested run. Raises
        :class:`RunNotFoundError` if none or several match (or the store holds no runs)."""
        if prefix is None:
            rows = self.connect().execute(sql_file("rooflake.store", "latest_run.sql")).fetchall()
            if not rows:
                raise RunNotFoundError(f"store {self.root} holds no runs (ingest one with `rl ingest FILE`)")
            return str(rows[0][0])
        if len(prefix) == 16 and self.has_run(prefix):  # a whole run id: no listing of every run
            return prefix
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
        written. Creates nothing (on object storage: a probe object is put and deleted)."""
        if self.url is not None:
            from rooflake.store import remote

            remote.check_writable(self.url)
        else:
            layout.check_writable(self._dir)

    def clean_staging(self) -> int:
        """Remove staging folders of dead (or zombie) writers, rolling back a swap one was killed in. Returns how
        many folders were removed. On object storage: delete superseded generations and uploads no ``runs`` file
        commits that are older than an hour (:func:`rooflake.store.remote.clean`); returns how many
        generations."""
        if self.url is not None:
            from rooflake.store import remote

            return remote.clean(self.url)
        from rooflake.store import publish

        return publish.clean_staging(self._dir)

    def publish(
        self, run_id: str, tables: dict[str, pa.Table | DuckTable], *, force: bool = False
    ) -> PublishResult:
        """Write one run atomically: stage every table, fsync, rename into place, ``runs`` last (see
        :func:`rooflake.store.publish.publish`). ``tables`` must hold ``runs``; an absent or empty data table
        writes no file. If the run exists and not ``force``, nothing is written (status ``exists``). Raises
        :class:`StoreError` when the store cannot be written; the store is then as before. On object storage:
        :func:`rooflake.store.remote.publish` (files of a new generation, ``runs`` last)."""
        if self.url is not None:
            from rooflake.store import remote

            return remote.publish(self.url, run_id, tables, force=force)
        from rooflake.store import publish

        return publish.publish(self._dir, run_id, tables, force=force)

    # ---- reading -----------------------------------------------------------------------------------------
    def connect(
        self,
        extra_views: dict[str, str] | None = None,
        setup: str = "",
        *,
        after: str | tuple[tuple[str, str], ...] = "",
        unsafe: bool = False,
    ) -> Any:  # -> duckdb.DuckDBPyConnection
        """A cursor on this store's DuckDB database (:func:`rooflake.store.database.build`): views ``runs``,
        ``kernels``, ``metrics``, ``ceilings``, ``ranges``, ``memops``, ``coverage``, ``estimates``, then ``extra_views``; ``setup``
        (the queries' macros) is run first, ``after`` (the queries' table macros, which bind to the views) last.
        Unless ``unsafe``, the database reads the store's files and nothing
        else, and its settings are locked (no ``COPY … TO``, ``ATTACH``, ``INSTALL``). The database is built once
        per Store object and rebuilt only when the store changed since (a run or a table's partition folder
        appears, goes or is replaced, a compaction commits): binding the views' globs costs ~0.25 s at 1,000 runs,
        a cursor nothing. A local store is checked with one ``stat`` per table folder and of ``compacted.json``,
        and their contents while one changed too recently for its stamp to show a second change
        (:mod:`rooflake.store.freshness`). On object storage the store is listed on every call (the views
        name each run's committed files: :class:`rooflake.store.remote.Snapshot`)."""
        where: Path | remote.Snapshot
        files: tuple[Any, ...] = ()
        if self.url is not None:
            where = _snapshot(self.url, self.only_runs)
            files = where.key()
        else:
            where = self._dir
        key = (
            tuple(self.only_runs or ()),
            files,
            tuple(sorted((extra_views or {}).items())),
            setup,
            after,
            unsafe,
        )
        if self._db is not None and self._db[0] == key:
            if self.url is not None:  # the same committed files on object storage
                return self._db[2].cursor()
            seen = self._db[1] and freshness.unchanged(self._db[1], self._dir)
            if seen is not None:
                self._db = (key, seen, self._db[2])
                return self._db[2].cursor()
        seen = freshness.look(self._dir) if self.url is None else None  # before the build reads the store
        con = database.build(where, self.only_runs, extra_views, setup, after=after, unsafe=unsafe)
        self._db = (key, seen, con)
        return con.cursor()

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
        :func:`rooflake.store.doctor.doctor`. Raises :class:`StoreError` for a local folder that does not exist
        (:func:`rooflake.store.layout.existing_root`: no store there is no healthy store)."""
        if self.url is not None:
            from rooflake.store import remote

            return remote.doctor(self.url)
        from rooflake.store import doctor

        layout.existing_root(self._dir)
        return doctor.doctor(self._dir)
