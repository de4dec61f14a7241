"""The Parquet store: layout, atomic publish, dedupe, listing runs, and a DuckDB connection with one view per table.

Layout (DESIGN.md section 3), table first, Hive-partitioned, ``run_id`` also kept inside each file::

    STORE/<table>/run_id=<id>/part-0.parquet      tables: kernels, metrics, ceilings, runs
    STORE/.staging/<id>.<pid>.<nonce>/            a run being written
    STORE/.lock                                   held (flock) only while renaming into place

A run exists once its ``runs`` partition exists; it is renamed into place last, and views only show rows whose
run has a ``runs`` row, so a crash never leaves a half-run visible.
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import fcntl
import os
import secrets
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from rooflake.schema import SCHEMA_VERSION, RunNotFoundError, StoreError

DATA_TABLES = ("kernels", "metrics", "ceilings", "ranges", "memops", "coverage")
ALL_TABLES = (*DATA_TABLES, "runs")
STAGING = ".staging"


def default_root() -> Path:
    """``$RL_STORE`` if set, else the platform data dir (``~/.local/share/rooflake`` on Linux)."""
    env = os.environ.get("RL_STORE")
    if env:
        return Path(env)
    from platformdirs import user_data_dir

    return Path(user_data_dir("rooflake", appauthor=False))


@dataclass(frozen=True)
class PublishResult:
    """Outcome of :meth:`Store.publish`: ``status`` is ``ingested``, ``replaced`` or ``exists``."""

    run_id: str
    status: str


def _stat_columns(schema: pa.Schema) -> list[str]:
    """Columns that get Parquet min/max statistics: all but floating-point ones.

    Arrow leaves NaN out of min/max, and DuckDB (2.0) folds ``isnan(x)`` and comparisons to constants from those
    statistics, so a stored NaN would read as "not NaN" and pass ``x > 0`` filters. Without statistics on float
    columns every NaN stays visible (tested in tests/test_roundtrip.py).
    """
    return [f.name for f in schema if not pa.types.is_floating(f.type)]


def _duck_type(t: pa.DataType) -> str:
    """DuckDB type of an Arrow type of our schemas (strings, integers, floats, timestamps, lists, maps)."""
    if pa.types.is_string(t):
        return "VARCHAR"
    if pa.types.is_int64(t):
        return "BIGINT"
    if pa.types.is_uint64(t):
        return "UBIGINT"
    if pa.types.is_float64(t):
        return "DOUBLE"
    if pa.types.is_timestamp(t):
        return "TIMESTAMPTZ" if t.tz else "TIMESTAMP"
    if pa.types.is_list(t):
        return f"{_duck_type(t.value_type)}[]"
    if pa.types.is_map(t):
        return f"MAP({_duck_type(t.key_type)}, {_duck_type(t.item_type)})"
    raise TypeError(f"no DuckDB type for {t}")


def conform_select(schema: pa.Schema, exprs: dict[str, str]) -> str:
    """A DuckDB select list giving exactly ``schema``'s columns, in order: ``CAST(expr AS type) AS "name"`` for the
    columns in ``exprs`` (SQL expressions), ``NULL::type`` for the others. Raises ``KeyError`` for an expression
    naming no column of ``schema`` (a typo would otherwise drop data silently)."""
    unknown = set(exprs) - set(schema.names)
    if unknown:
        raise KeyError(f"not columns of the schema: {sorted(unknown)}")
    return ", ".join(
        f'CAST({exprs[f.name]} AS {_duck_type(f.type)}) AS "{f.name}"'
        if f.name in exprs
        else f'NULL::{_duck_type(f.type)} AS "{f.name}"'
        for f in schema
    )


class DuckTable:
    """A table of one run that is still a query in a reader's DuckDB connection: written to Parquet by DuckDB's
    streaming writer (no copy in Python memory), or fetched as Arrow.

    ``select`` is a full SELECT statement whose columns are exactly ``schema``'s (see :func:`conform_select`);
    ``num_rows`` is its row count, known beforehand (publish writes no file for an empty table); ``settings``: DuckDB
    settings in force while it runs (reset after). The connection must stay open until the table is written.
    """

    def __init__(
        self, con: Any, select: str, schema: pa.Schema, num_rows: int, settings: dict[str, str] | None = None
    ) -> None:
        self.con = con
        self.select = select
        self.schema = schema
        self.num_rows = num_rows
        self.settings = settings or {}

    @contextlib.contextmanager
    def _settings(self) -> Iterator[None]:
        for k, v in self.settings.items():
            self.con.execute(f"SET {k} = '{_sql_str(v)}'")
        try:
            yield
        finally:
            for k in self.settings:
                self.con.execute(f"RESET {k}")

    def to_arrow(self) -> pa.Table:
        """The rows as a ``pyarrow.Table`` with ``schema`` (field metadata included). Raises ``duckdb.Error``."""
        with self._settings():
            return fetch_arrow(self.con, self.select).cast(self.schema)

    def write_parquet(self, path: Path, metadata: dict[bytes, bytes]) -> None:
        """Write the rows to ``path`` (zstd) with key-value ``metadata`` plus the Arrow schema (``ARROW:schema``,
        as pyarrow writes it, so Arrow readers see the units and descriptions). Statistics are DuckDB's, also on
        float columns: the readers that use this class hold no NaN (see :func:`_stat_columns`). Raises ``OSError``
        when the file cannot be written, ``duckdb.Error`` when the query fails."""
        import base64

        import duckdb

        kv = {k.decode(): v.decode() for k, v in metadata.items()}
        kv["ARROW:schema"] = base64.b64encode(self.schema.serialize().to_pybytes()).decode()
        opts = ", ".join(f"'{_sql_str(k)}': '{_sql_str(v)}'" for k, v in kv.items())
        try:
            with self._settings():
                self.con.execute(
                    f"COPY ({self.select}) TO '{_sql_str(str(path))}' "
                    f"(FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE {ROW_GROUP_ROWS}, KV_METADATA {{{opts}}})"
                )
        except duckdb.IOException as e:  # a full or read-only disk: publish reports it as a store error
            raise OSError(str(e).splitlines()[0]) from e


def duck_row(con: Any, schema: pa.Schema, values: dict[str, Any]) -> DuckTable:
    """A one-row :class:`DuckTable` of ``schema`` holding ``values`` (str, int, float, bool, tz-aware datetime,
    list, or a dict or list of (key, value) pairs for a map column; absent or None: NULL), written as SQL literals.
    For a reader that already has a DuckDB connection: ``pa.table`` of Python values makes pyarrow import pandas when
    it is installed (+0.2 s, +33 MB resident for the rest of the ingest). Raises ``TypeError`` for another value
    type."""
    # CASE over a column, not a bare constant: DuckDB writes a constant column as REQUIRED (not null), pyarrow as
    # OPTIONAL, and every partition of a table must agree
    exprs = {
        f.name: f"CASE WHEN r.one = 1 THEN {_sql_literal(values[f.name], f.type)} END"
        for f in schema
        if values.get(f.name) is not None
    }
    return DuckTable(con, f"SELECT {conform_select(schema, exprs)} FROM (SELECT 1 AS one) AS r", schema, 1)


def _sql_literal(v: Any, t: pa.DataType) -> str:
    """``v`` as a DuckDB literal (cast to the column's type by :func:`conform_select`)."""
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str):
        return f"'{_sql_str(v)}'"
    if isinstance(v, datetime.datetime):
        return f"TIMESTAMPTZ '{v.isoformat()}'" if v.tzinfo else f"TIMESTAMP '{v.isoformat()}'"
    if pa.types.is_map(t):
        pairs = v.items() if isinstance(v, dict) else v
        return (
            "MAP {"
            + ", ".join(f"{_sql_literal(k, t.key_type)}: {_sql_literal(x, t.item_type)}" for k, x in pairs)
            + "}"
        )
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_sql_literal(x, t.value_type) for x in v) + "]"
    raise TypeError(f"no SQL literal for {type(v).__name__}")


# DuckTable's Parquet row groups: bounded memory for rows with long names (150k nsys kernels with their names, 2
# threads: +104 MB while writing with 16k-row groups, +55 MB with 4k)
ROW_GROUP_ROWS = 4096


def _sql_str(s: str) -> str:
    """``s`` for inside an SQL string literal (quotes doubled)."""
    return s.replace("'", "''")


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Store:
    """A rooflake store rooted at ``root`` (created on first write)."""

    def __init__(self, root: str | Path | None = None, *, only_runs: list[str] | None = None) -> None:
        """``only_runs``: views read just these runs' files (a report over 100 of 1,000 runs binds 100 files per
        query, not 1,000); None = every run."""
        self.root = Path(root) if root is not None else default_root()
        self.only_runs = sorted(set(only_runs)) if only_runs is not None else None
        if any(c in str(self.root) for c in "*?[]{}"):
            raise StoreError(
                f"store path {self.root} contains a glob character (* ? [ ] {{ }}): choose another path"
            )
        if self.root.exists() and not self.root.is_dir():
            raise StoreError(f"store {self.root} is not a directory")

    # ---- paths -------------------------------------------------------------------------------------------
    def partition(self, table: str, run_id: str) -> Path:
        return self.root / table / f"run_id={run_id}"

    def glob(self, table: str) -> str:
        return str(self.root / table / "*" / "*.parquet")

    def has_run(self, run_id: str) -> bool:
        return (self.partition("runs", run_id) / "part-0.parquet").exists()

    def run_ids(self) -> list[str]:
        d = self.root / "runs"
        if not d.is_dir():
            return []
        return sorted(
            p.name.split("=", 1)[1]
            for p in d.iterdir()
            if p.name.startswith("run_id=") and (p / "part-0.parquet").exists()
        )

    def resolve(self, prefix: str | None) -> str:
        """The full run id that ``prefix`` names; None names the latest ingested run. Raises
        :class:`RunNotFoundError` if none or several match (or the store holds no runs)."""
        if prefix is None:
            rows = (
                self.connect()
                .execute("SELECT run_id FROM runs ORDER BY ingested_at DESC, run_id LIMIT 1")
                .fetchall()
            )
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
        written. Creates nothing: a failed ingest into a store that does not exist yet leaves no directory."""
        base = self.root
        while not base.exists() and base != base.parent:
            base = base.parent
        if not base.is_dir():
            raise StoreError(f"store {self.root} is not writable ({base} is not a directory)")
        probe = base / f".rooflake-probe.{os.getpid()}.{secrets.token_hex(4)}"
        try:
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as e:
            raise StoreError(f"store {self.root} is not writable ({e.strerror or e})") from e

    def _ensure_root(self) -> None:
        try:
            (self.root / STAGING).mkdir(parents=True, exist_ok=True)
            probe = self.root / STAGING / f".probe.{os.getpid()}.{secrets.token_hex(4)}"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as e:
            raise StoreError(f"store {self.root} is not writable ({e.strerror or e})") from e

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        with open(self.root / ".lock", "a+b") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def _restore(self, run_id: str, trash: Path, moved: list[str]) -> None:
        """Undo a half-done swap: remove the new partitions already moved in, put the old ones back."""
        for name in moved:
            shutil.rmtree(self.partition(name, run_id), ignore_errors=True)
        if trash.is_dir():
            for old in trash.iterdir():
                target = self.partition(old.name, run_id)
                if not target.exists():
                    target.parent.mkdir(parents=True, exist_ok=True)
                    os.rename(old, target)

    def clean_staging(self) -> int:
        """Remove staging directories left by dead processes; a crash in the middle of a ``--force`` swap left the
        old run's partitions in ``old/``: they go back first when the run has no ``runs`` row. Returns how many
        directories were removed."""
        d = self.root / STAGING
        if not d.is_dir():
            return 0
        n = 0
        with self._lock():
            for p in d.iterdir():
                parts = p.name.split(".")
                if len(parts) == 3 and parts[1].isdigit() and not _pid_alive(int(parts[1])):
                    if (p / "old").is_dir() and (p / "manifest").exists() and not self.has_run(parts[0]):
                        staged = (p / "manifest").read_text().split()
                        moved_in = [t for t in staged if not (p / t).exists()]
                        self._restore(parts[0], p / "old", moved_in)
                    shutil.rmtree(p, ignore_errors=True)
                    n += 1
        return n

    def publish(
        self, run_id: str, tables: dict[str, pa.Table | DuckTable], *, force: bool = False
    ) -> PublishResult:
        """Write one run atomically: stage every table, fsync, rename into place, ``runs`` last.

        ``tables`` must hold ``runs``; each is a ``pyarrow.Table`` or a :class:`DuckTable`; a data table that is absent or empty writes no file (its view simply has no
        rows of this run). If the run exists and not
        ``force``, nothing is written (status ``exists``). Safe against concurrent publishers (an flock on
        ``STORE/.lock`` is held only during the renames). Raises :class:`StoreError` when the store cannot be
        written; the store is then as before.
        """
        self._ensure_root()
        if self.has_run(run_id) and not force:
            return PublishResult(run_id, "exists")
        stage = self.root / STAGING / f"{run_id}.{os.getpid()}.{secrets.token_hex(4)}"
        try:
            for name in ALL_TABLES:
                table = tables.get(name)
                if name != "runs" and (table is None or table.num_rows == 0):
                    continue
                if table is None:
                    raise StoreError(f"run {run_id}: no runs row to publish")
                dest = stage / name
                dest.mkdir(parents=True)
                path = dest / "part-0.parquet"
                meta = dict(table.schema.metadata or {})
                meta[b"rooflake.schema_version"] = SCHEMA_VERSION.encode()
                if isinstance(table, DuckTable):
                    table.write_parquet(path, meta)
                else:
                    pq.write_table(
                        table.replace_schema_metadata(meta),
                        path,
                        compression="zstd",
                        write_statistics=_stat_columns(table.schema),
                    )
                with open(path, "rb+") as f:
                    os.fsync(f.fileno())
                _fsync_dir(dest)
            # which tables this run brings: after a crash mid-swap, clean_staging knows which ones it had moved in
            (stage / "manifest").write_text("\n".join(t for t in ALL_TABLES if (stage / t).exists()))
            with self._lock():
                existed = self.has_run(run_id)
                if existed and not force:
                    return PublishResult(run_id, "exists")
                trash = stage / "old"
                trash.mkdir()
                moved: list[str] = []
                try:
                    # hide the old run first (runs row), then swap the data partitions, then show the new run
                    for name in ("runs", *DATA_TABLES):
                        old = self.partition(name, run_id)
                        if old.exists():
                            os.rename(old, trash / name)
                    for name in (*DATA_TABLES, "runs"):
                        if not (stage / name).exists():
                            continue
                        target = self.partition(name, run_id)
                        target.parent.mkdir(parents=True, exist_ok=True)
                        os.rename(stage / name, target)
                        moved.append(name)
                        _fsync_dir(target.parent)
                except OSError:
                    self._restore(run_id, trash, moved)
                    raise
            return PublishResult(run_id, "replaced" if existed else "ingested")
        except OSError as e:
            if e.errno in (errno.EACCES, errno.EROFS, errno.ENOSPC, errno.EPERM, errno.EDQUOT):
                raise StoreError(f"cannot write store {self.root}: {e.strerror}") from e
            raise StoreError(f"cannot write store {self.root}: {e}") from e
        finally:
            shutil.rmtree(stage, ignore_errors=True)

    # ---- reading -----------------------------------------------------------------------------------------
    def connect(
        self, extra_views: dict[str, str] | None = None, setup: str = ""
    ):  # -> duckdb.DuckDBPyConnection
        """A cursor on this store's DuckDB database (see :meth:`_build`). The database and its views are built once
        per Store object and rebuilt when runs or tables appear or disappear: binding the views' globs costs
        ~0.25 s at 1,000 runs, a cursor nothing. ``setup``: SQL run before the views are created (the queries'
        macros)."""
        import os

        runs_dir = self.root / "runs"
        key = (
            tuple(self.only_runs or ()),
            tuple(any((self.root / t).glob("run_id=*/part-0.parquet")) for t in ALL_TABLES),
            len(os.listdir(runs_dir)) if runs_dir.is_dir() else 0,
            tuple(sorted((extra_views or {}).items())),
            setup,
        )
        cached = getattr(self, "_db", None)
        if cached is None or cached[0] != key:
            self._db = (key, self._build(extra_views, setup))
        return self._db[1].cursor()

    def _build(
        self, extra_views: dict[str, str] | None = None, setup: str = ""
    ):  # -> duckdb.DuckDBPyConnection
        """An in-memory DuckDB connection with views ``runs``, ``kernels``, ``metrics``, ``ceilings``.

        Each view reads ``STORE/<table>/*/*.parquet`` (Hive partitions); data views keep only runs that have a
        ``runs`` row. An empty store gives empty views with the declared columns. ``setup`` is run first (macros,
        persistent so that every cursor sees them); ``extra_views`` maps view names to SQL bodies created after
        the table views.
        """
        import duckdb

        from rooflake.schema import TABLES

        con = duckdb.connect()
        if setup:
            con.execute(setup)
        files: dict[str, list[str]] | None = None
        if self.only_runs is not None:
            files = {
                t: [str(p) for r in self.only_runs if (p := self.partition(t, r) / "part-0.parquet").exists()]
                for t in ALL_TABLES
            }
            has = {t: bool(files[t]) for t in ALL_TABLES}
        else:
            has = {t: any((self.root / t).glob("run_id=*/part-0.parquet")) for t in ALL_TABLES}
        for t in ("runs", *DATA_TABLES):
            if has[t] and has["runs"]:
                # hive_partitioning=true would prune filtered queries by directory (13 ms vs 90 ms at 1,000 runs) but
                # makes every bind parse 1,000 paths; views over a few runs (only_runs) list their files instead
                where = (
                    "[" + ", ".join(f"'{_sql_str(f)}'" for f in files[t]) + "]"
                    if files is not None
                    else f"'{_sql_str(self.glob(t))}'"
                )
                src = f"read_parquet({where}, hive_partitioning = false)"
                body = f"SELECT * FROM {src}"
                if t != "runs":
                    body += " WHERE run_id IN (SELECT run_id FROM runs)"
            else:
                # a catalog table (cursors of this database see it too), declared in DDL: registering an empty
                # Arrow table instead costs 0.17 s the first time, most of a cold `rl sql`
                cols = ", ".join(f'"{f.name}" {_duck_type(f.type)}' for f in TABLES[t])
                con.execute(f"CREATE TABLE __empty_{t} ({cols})")
                body = f"SELECT * FROM __empty_{t}"
            con.execute(f"CREATE VIEW {t} AS {body}")
        for name, sql in (extra_views or {}).items():
            con.execute(f"CREATE VIEW {name} AS {sql}")
        return con


def fetch_arrow(con: Any, sql: str, params: dict[str, Any] | None = None) -> pa.Table:
    """Run ``sql`` with named ``params`` on DuckDB connection ``con``; the result as a ``pyarrow.Table``
    (empty for statements without a result). Raises ``duckdb.Error``."""
    rel = con.sql(sql, params=params or None)
    if rel is None:
        return pa.table({})
    fn = getattr(rel, "to_arrow_table", None) or rel.arrow
    return fn()
