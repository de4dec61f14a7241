"""Atomic publish of one run, and the clean-up of what a killed writer left (docs/architecture.md section 3).

A run is written whole under ``STORE/.staging/<id>.<pid>.<nonce>/`` (each table's file fsynced, with a
``manifest`` of the tables it brings), then moved into place under the store's flock:

1. the files of the run already in place (a ``--force`` re-ingest, or the leftovers of a crash) are hard-linked
   into ``<stage>/old/`` — nothing visible changes;
2. each data table's new file is renamed over the old one (``rename(2)`` replaces a file atomically), or its
   partition folder is renamed into place; a table the old run had and the new one lacks is removed;
3. the ``runs`` file is renamed last: that rename is the commit.

So the run's ``runs`` row exists at every instant of a ``--force`` re-ingest (a reader sees the old run or the new
one, and a data table is old or new, never absent or half-written). A failure before the commit puts the old files
back from ``old/``; a writer killed before the commit is rolled back by the next :func:`clean_staging`, which
treats a staging folder as dead once its process is gone or a zombie.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import secrets
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rooflake.schema import SCHEMA_VERSION, StoreError
from rooflake.schema.duck import DuckTable
from rooflake.store.layout import ALL_TABLES, DATA_TABLES, PART, PROBE, STAGING, ensure_root, partition

if TYPE_CHECKING:  # imported where a file is written: reading a store needs no pyarrow (start-up time)
    import pyarrow as pa

MANIFEST = "manifest"
OLD = "old"


@dataclass(frozen=True)
class PublishResult:
    """Outcome of :func:`publish`: ``status`` is ``ingested``, ``replaced`` or ``exists``."""

    run_id: str
    status: str


def stat_columns(schema: pa.Schema) -> list[str]:
    """Columns that get Parquet min/max statistics: all but floating-point ones.

    Arrow leaves NaN out of min/max, and DuckDB (2.0) folds ``isnan(x)`` and comparisons to constants from those
    statistics, so a stored NaN would read as "not NaN" and pass ``x > 0`` filters. Without statistics on float
    columns every NaN stays visible (tested in tests/test_roundtrip.py).
    """
    import pyarrow as pa

    return [f.name for f in schema if not pa.types.is_floating(f.type)]


def fsync_dir(path: Path) -> None:
    """fsync a directory, so that the renames into it survive a power loss."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` is running. A zombie (exited, not yet reaped: ``kill(pid, 0)`` still succeeds) is
    dead: its state in ``/proc/<pid>/stat`` is ``Z`` (or ``X``)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # no /proc (macOS) or the process just went: trust kill()
        return True
    state = stat.rsplit(")", 1)[-1].split()[:1]  # the command name in (…) may hold spaces
    return state not in (["Z"], ["X"])


#: a writer's liveness lock beside its staging folder: ``<stage>.alive``, flocked while it writes and swaps in
ALIVE = ".alive"


@contextlib.contextmanager
def stage_held(stage: Path) -> Iterator[None]:
    """Hold the flock of ``<stage>.alive`` (created first, before the folder) while the stage is written and swapped
    in, and remove it after: the kernel drops it when the writer dies, whichever PID namespace it runs in (a
    writer in another container on a shared volume has a PID the cleaner cannot see: :func:`writer_alive`)."""
    lock = stage.with_name(stage.name + ALIVE)
    while True:
        f = open(lock, "a+b")  # noqa: SIM115 - closed below
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            if os.fstat(f.fileno()).st_ino == os.stat(lock).st_ino:
                break  # (else a cleaner removed the file between its creation and the lock: take a new one)
        except FileNotFoundError:
            pass
        f.close()
    try:
        yield
    finally:
        lock.unlink(missing_ok=True)  # (before the unlock: a free lock file is a dead writer's)
        f.close()


def writer_alive(stage: Path) -> bool:
    """Whether the writer of staging folder ``stage`` (``<run>.<pid>.<token>``) is alive: it holds the flock of
    ``<stage>.alive`` (:func:`stage_held`); a folder without one (a writer of an older rooflake, or a compaction's)
    by its PID (:func:`pid_alive`)."""
    return _lock_held(stage.with_name(stage.name + ALIVE), stage.name.split(".")[1])


def _lock_held(lock: Path, pid: str) -> bool:
    """Whether ``lock``'s flock is held by another process; without the file, whether process ``pid`` lives."""
    try:
        f = open(lock, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        return pid.isdigit() and pid_alive(int(pid))
    with f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(f, fcntl.LOCK_UN)
        return False


@contextlib.contextmanager
def store_lock(root: Path) -> Iterator[None]:
    """Hold the store's exclusive flock (``STORE/.lock``); the kernel drops it when the holder dies."""
    with open(root / ".lock", "a+b") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def write_part(table: pa.Table | DuckTable, path: Path) -> None:
    """Write one table of a run to ``path`` (zstd, page checksums, the schema version in the key-value metadata)
    and fsync it.
    Raises ``OSError`` when it cannot be written."""
    meta = dict(table.schema.metadata or {})
    meta[b"rooflake.schema_version"] = SCHEMA_VERSION.encode()
    stats = stat_columns(table.schema)
    if isinstance(table, DuckTable):
        table.write_parquet(path, meta, write_statistics=stats)
    else:
        import pyarrow.parquet as pq

        pq.write_table(
            table.replace_schema_metadata(meta),
            path,
            compression="zstd",
            write_statistics=stats,
            write_page_checksum=True,
        )
    with open(path, "rb+") as f:
        os.fsync(f.fileno())


def stage_run(stage: Path, run_id: str, tables: dict[str, pa.Table | DuckTable]) -> None:
    """Write every non-empty table of the run under ``stage/<table>/`` and the manifest naming them. Raises
    :class:`StoreError` without a ``runs`` table, ``OSError`` when a file cannot be written."""
    if tables.get("runs") is None:
        raise StoreError(f"run {run_id}: no runs row to publish")
    staged = []
    for name in ALL_TABLES:
        table = tables.get(name)
        if table is None or (name != "runs" and table.num_rows == 0):
            continue
        dest = stage / name
        dest.mkdir(parents=True)
        write_part(table, dest / PART)
        fsync_dir(dest)
        staged.append(name)
    (stage / MANIFEST).write_text("\n".join(staged))
    fsync_dir(stage)


def _keep_old(root: Path, run_id: str, stage: Path) -> None:
    """Hard-link (or, where links are refused, copy) the run's files in place into ``stage/old/<table>/``.
    ``stage/old/`` is made even for a new run: it marks a swap as begun, for :func:`clean_staging`."""
    (stage / OLD).mkdir()
    for name in ALL_TABLES:
        src = partition(root, name, run_id) / PART
        if not src.exists():
            continue
        dest = stage / OLD / name
        dest.mkdir(parents=True)
        try:
            os.link(src, dest / PART)
        except OSError:
            shutil.copyfile(src, dest / PART)
        fsync_dir(dest)


def _move_in(root: Path, run_id: str, stage: Path, name: str) -> None:
    """Put table ``name`` of the staged run in place: its file renamed over the old one, its folder renamed into
    place, or (a table the new run lacks) the old partition removed."""
    target = partition(root, name, run_id)
    src = stage / name
    if (src / PART).exists():
        if target.is_dir():
            os.replace(src / PART, target / PART)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.rename(src, target)
    elif target.exists() and name != "runs":
        shutil.rmtree(target)
    else:
        return
    fsync_dir(target.parent)


def _restore_file(kept: Path, target: Path) -> None:
    """Put ``kept`` back at ``target`` atomically; ``kept`` stays (so a second roll-back gives the same store)."""
    if target.exists() and os.path.samefile(kept, target):
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f".restore.{secrets.token_hex(4)}"  # no .parquet suffix: readers never glob it
    try:
        os.link(kept, tmp)
    except OSError:
        shutil.copyfile(kept, tmp)
    os.replace(tmp, target)


def roll_back(root: Path, run_id: str, stage: Path) -> None:
    """Undo an uncommitted swap of ``stage`` (its ``runs`` file not yet moved in): the old files back from
    ``stage/old/``, the partitions the new run brought and the old one lacked removed. Idempotent."""
    staged = (stage / MANIFEST).read_text().split() if (stage / MANIFEST).exists() else []
    for name in (*DATA_TABLES, "runs"):
        kept = stage / OLD / name / PART
        target = partition(root, name, run_id)
        if kept.exists():
            _restore_file(kept, target / PART)
        elif name in staged and not (stage / name / PART).exists() and target.exists():
            shutil.rmtree(target)


def swap_in(root: Path, run_id: str, stage: Path) -> None:
    """Move a staged run into place, ``runs`` last (the caller holds :func:`store_lock`). On ``OSError`` the old
    run is put back and the error raised again."""
    _keep_old(root, run_id, stage)
    try:
        for name in (*DATA_TABLES, "runs"):
            _move_in(root, run_id, stage, name)
    except OSError:
        roll_back(root, run_id, stage)
        raise


def remove_stage(stage: Path) -> None:
    """Delete a staging folder, its manifest first (a folder without one is never rolled back). An exception raised
    inside by a signal's handler (``rl``'s SIGTERM handler raises SystemExit, Ctrl-C KeyboardInterrupt, between any
    two bytecodes) would leave the folder half removed, a stale staging folder for ``rl doctor``: the removal is then
    done again before the exception goes on."""
    try:
        _remove_stage(stage)
    except BaseException:
        _remove_stage(stage)
        raise


def _remove_stage(stage: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        (stage / MANIFEST).unlink()
    shutil.rmtree(stage, ignore_errors=True)


def _store_error(root: Path, e: OSError) -> StoreError:
    if e.errno in (errno.EACCES, errno.EROFS, errno.ENOSPC, errno.EPERM, errno.EDQUOT):
        return StoreError(f"cannot write store {root}: {e.strerror}")
    return StoreError(f"cannot write store {root}: {e}")


def is_published(root: Path, run_id: str) -> bool:
    """Whether run ``run_id`` is in the store: its ``runs`` file exists, or the last compaction holds it
    (:mod:`rooflake.store.compact`)."""
    from rooflake.store.compact import compacted_runs

    return (partition(root, "runs", run_id) / PART).exists() or run_id in compacted_runs(root)


def publish(
    root: Path, run_id: str, tables: dict[str, pa.Table | DuckTable], *, force: bool = False
) -> PublishResult:
    """Write one run atomically (see the module docstring). ``tables`` must hold ``runs``; each is a
    ``pyarrow.Table`` or a :class:`DuckTable`; a data table that is absent or empty writes no file. If the run
    exists and not ``force``, nothing is written (status ``exists``). Safe against concurrent publishers. Raises
    :class:`StoreError` when the store cannot be written; the store is then as before."""
    staging = ensure_root(root)
    if is_published(root, run_id) and not force:
        return PublishResult(run_id, "exists")
    stage = staging / f"{run_id}.{os.getpid()}.{secrets.token_hex(4)}"
    try:
        with stage_held(stage):
            try:
                stage_run(stage, run_id, tables)
                with store_lock(root):
                    existed = is_published(root, run_id)
                    if existed and not force:
                        return PublishResult(run_id, "exists")
                    swap_in(root, run_id, stage)
                return PublishResult(run_id, "replaced" if existed else "ingested")
            finally:
                remove_stage(stage)
    except OSError as e:
        raise _store_error(root, e) from e


def clean_staging(root: Path) -> int:
    """Remove the staging folders of dead (or zombie) writers (:func:`writer_alive`); one killed in the middle of a
    swap is rolled back first (:func:`roll_back`). Returns how many folders were removed. A dead writer's
    writability probe (``.rooflake-probe.PID.TOKEN``, left when it was killed between writing and unlinking it) goes
    too."""
    d = root / STAGING
    if not d.is_dir():
        return 0
    n = 0
    with store_lock(root):
        for p in d.iterdir():
            if p.name.startswith(PROBE):
                pid = p.name[len(PROBE) :].split(".")[0]
                if pid.isdigit() and not pid_alive(int(pid)):
                    p.unlink(missing_ok=True)
                continue
            if p.name.endswith(ALIVE):  # a dead writer's lock whose folder is gone
                if not p.with_name(p.name[: -len(ALIVE)]).exists() and not _lock_held(p, ""):
                    p.unlink(missing_ok=True)
                continue
            parts = p.name.split(".")
            if len(parts) != 3 or not parts[1].isdigit() or writer_alive(p):
                continue
            if (p / MANIFEST).exists() and (p / OLD).is_dir() and (p / "runs" / PART).exists():
                roll_back(root, parts[0], p)
            remove_stage(p)
            p.with_name(p.name + ALIVE).unlink(missing_ok=True)
            n += 1
    return n
