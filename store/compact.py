"""Compaction: many small run partitions folded into a few compacted files per table, without changing any answer.

Layout (docs/architecture.md section 3)::

    STORE/<table>/run_id=<id>/part-0.parquet        what ingest writes: one file per run and table
    STORE/<table>/compacted/part-<gen>.parquet      what `rl compact` writes: one file per table and generation
    STORE/<table>/compacted/part-<gen>-<i>.parquet  ... or several, one per FILE_BYTES (1 GiB), for a big one
    STORE/compacted.json                            the commit: its generations (segments), their files, the runs

Incremental. A compaction writes one new *generation* (a segment: per table one file, or one per :data:`FILE_BYTES`
for a big table, its rows sorted by ``run_id`` across them) holding only the runs published as partitions since the
last one, and keeps the files of earlier generations as they are: its work is proportional to the new runs, not to
the store (:func:`plan`). Generations pile up, so small ones are
merged into the new one (size-tiered, by runs held): every generation holding at most :data:`MERGE_RATIO` times the
runs the new one would hold is merged into it, smallest first, and never more than :data:`MAX_SEGMENTS` remain.
Generations' sizes then fall geometrically from the oldest (largest) to the newest, so a store of ``n`` runs
compacted ``k`` runs at a time holds at most ``log2(n / k) + 1`` generations (and :data:`MAX_SEGMENTS`), and each
run is rewritten ``log2(n / k)`` times over its life, amortized. A run re-ingested with ``--force`` after it was
compacted (its partitions win for every reader) makes its generation *dirty*: that generation is merged into the
new one, without its stale rows.

A run lives in exactly one place. While its ``runs/run_id=<id>/part-0.parquet`` exists it is read from its
partitions (a fresh ingest, or a ``--force`` re-ingest of a compacted run); otherwise, if ``compacted.json`` names
it, from the compacted files (the views' ``__published`` table, ``read_branch.sql``). So, locally:

1. the new generation's files are written under ``STORE/.staging/``, fsynced, and renamed into ``compacted/``;
2. ``compacted.json`` is replaced atomically (write, fsync, rename): nothing visible changes yet, every run folded
   in still has its ``runs`` partition, which wins, and the merged generations' files are still there;
3. the partitions of every compacted run are removed, every ``runs`` partition first (from then on the compacted
   rows are the ones read), then the data partitions (left-overs no view reads, as their run has no ``runs``
   partition);
4. the files of the merged generations (and of a compaction killed before step 2) are removed.

One compaction per store at a time: a second one fails at once with a :class:`StoreError` naming the store and
changes nothing (locally an exclusive ``flock`` on ``STORE/.compact.lock``, released by the kernel when its holder
dies; on object storage :func:`remote_lock`). The rest holds the store's flock, so no ingest swaps a run in between
(an ingest waits for it). A compaction killed anywhere leaves a store that answers as before: before step 2 the
staged files are not named by the manifest; after it the next compaction finishes steps 3 and 4.

On object storage (``s3://``, :func:`compact_remote`) the same layout is written without rename or flock: the lock
is an object put only if none exists (``If-None-Match: *``), the new files are uploaded under new names, and
``compacted.json`` is put last, only over the manifest the listing read (``If-Match`` its ETag): that PUT is the
commit, so two compactions can never both commit over the same manifest. Then the folded partitions and the merged
generations' files are deleted. Compacted files are written like every other part (zstd, no float statistics:
:func:`rooflake.store.publish.stat_columns`), sorted by ``run_id`` in row groups of :data:`ROW_GROUP_ROWS` rows,
so a one-run query skips the row groups of other runs by their statistics.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import os
import secrets
import shutil
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rooflake.store.database import RELIST, gist, gone
from rooflake.store.layout import ALL_TABLES, COMPACTED, DATA_TABLES, PART, run_of
from rooflake.store.manifest import (  # noqa: F401 (compacted_runs: re-exported)
    MANIFEST,
    Manifest,
    Segment,
    compacted_runs,
    manifest_body,
    parse_manifest,
    read_manifest,
    write_manifest,
)

ROW_GROUP_ROWS = 65_536
#: a compacted file is closed, and the generation's next file of the table begun, once it holds this many bytes
#: (at a row group's end): files stay in the 128 MB - 1 GB range Spark's and Trino's splits suit, and far below
#: S3's 5 TB object limit, however large a generation grows (a 10 TB ``metrics`` table)
FILE_BYTES = 1 << 30
#: a generation holding at most this many times the runs of the new one is merged into it
MERGE_RATIO = 2
#: at most this many generations (segments) of compacted files per table after a compaction
MAX_SEGMENTS = 8
#: the local compaction lock (flock) and the object holding it on object storage
LOCK = ".compact.lock"
#: a lock object on object storage older than this is taken over (its compaction was killed): one hour
LOCK_STALE_S = 3600.0
PKG = "rooflake.store"


@dataclass(frozen=True)
class CompactResult:
    """What one compaction did: ``runs`` (runs the compacted files hold), ``partitions_removed`` (run partition
    folders or files deleted), ``files_before`` / ``files_after`` (Parquet files of the store), ``generation`` (the
    manifest's, unchanged when there was nothing to do), ``written`` (runs whose rows this compaction wrote: the
    new ones and those of merged generations), ``merged`` (generations merged into the new one), ``segments``
    (generations after it)."""

    runs: int
    partitions_removed: int
    files_before: int
    files_after: int
    generation: str
    written: int = 0
    merged: int = 0
    segments: int = 0


# ---- planning -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Plan:
    """What a compaction writes: ``parts`` (runs read from their partitions: published since, or re-ingested),
    ``merged`` (generations rewritten into the new one, their rows of ``parts`` runs skipped), ``kept`` (left
    as they are). ``empty``: nothing to write."""

    parts: frozenset[str]
    merged: tuple[Segment, ...]
    kept: tuple[Segment, ...]

    @property
    def empty(self) -> bool:
        return not self.parts and not self.merged


def plan(manifest: Manifest, parts: frozenset[str], held: Callable[[Segment], frozenset[str]]) -> Plan:
    """Which generations the next compaction merges (see the module docstring): those holding a run of ``parts``
    (re-ingested since: ``held(segment)`` gives a segment's run ids, asked only then), then, smallest first, every
    one holding at most :data:`MERGE_RATIO` times the runs the new generation holds so far, and more while over
    :data:`MAX_SEGMENTS` would remain."""
    segments = list(manifest.parts())
    forced = parts & manifest.runs
    if forced and len(segments) == 1:
        dirty = segments
    else:
        dirty = [s for s in segments if forced and forced & held(s)]
    rest = sorted((s for s in segments if s not in dirty), key=lambda s: (s.n_runs, s.generation))
    size = len(parts - forced) + sum(s.n_runs for s in dirty)
    merged = list(dirty)
    while rest:
        count = len(rest) + (1 if size else 0)
        if (size and rest[0].n_runs <= MERGE_RATIO * size) or count > MAX_SEGMENTS:
            size += rest[0].n_runs
            merged.append(rest.pop(0))
        else:
            break
    if len(merged) == 1 and not parts:  # one generation rewritten alone: nothing gained
        return Plan(parts, (), tuple(segments))
    kept = tuple(s for s in segments if s not in merged)
    return Plan(parts, tuple(merged), kept)


# ---- writing ------------------------------------------------------------------------------------------------
def _connection(fs: Any = None) -> Any:
    """A DuckDB connection with the typed empty stand-in of every table (``empty_table.sql``), reading through
    the fsspec filesystem ``fs`` when given."""
    from rooflake.store.database import stand_ins

    con = stand_ins()
    if fs is not None:
        con.register_filesystem(fs)
    return con


def _rows_sql(
    table: str, parts: list[str], merged: list[str], *, after: str | None = None, upto: str | None = None
) -> str | None:
    """``compact_rows.sql`` for ``table`` over partition files ``parts`` and merged compacted files ``merged``, the
    rows of runs ``after < run_id <= upto`` only (None: no bound on that side); None when there is no file to
    read."""
    from rooflake.schema import TABLES
    from rooflake.schema.duck import duck_type, sql_str, sql_template

    branches = []
    for name, files in (("compact_from_parts.sql", parts), ("compact_from_compacted.sql", merged)):
        if files:
            listed = "[" + ", ".join(f"'{sql_str(f)}'" for f in files) + "]"
            branches.append(sql_template(PKG, name, files=listed))
    if not branches:
        return None
    columns = ", ".join(f'CAST("{f.name}" AS {duck_type(f.type)}) AS "{f.name}"' for f in TABLES[table])
    bounds = [
        f"run_id > '{sql_str(after)}'" if after is not None else "",
        f"run_id <= '{sql_str(upto)}'" if upto is not None else "",
    ]
    where = " AND ".join(b for b in bounds if b) or "true"
    return sql_template(
        PKG, "compact_rows.sql", table=table, columns=columns, sources="\n".join(branches), where=where
    )


#: partition files read by one statement of a compaction: DuckDB keeps a reader per file of a union-by-name scan
#: (~130 KB each), so reading 10,000 at once peaked at 1.9 GB; batches of this many runs keep it bounded
BATCH_RUNS = 256


def _batched_sqls(table: str, parts: list[str], merged: list[str], bounds: list[str]) -> list[str]:
    """The statements that read ``table``'s rows in run order, one per run range: ``bounds`` (sorted run ids, the
    last of each batch of :data:`BATCH_RUNS` runs read from partitions) cut the runs into ranges ``(bound_i-1,
    bound_i]``, the last range open above; each statement reads the partition files of its range's runs and the
    merged files' rows in the range (their row groups pruned on run_id's statistics)."""
    found = [run_of(f) for f in parts]
    if None in found:  # (a file not named by its run: one statement over every run)
        bounds = []
    by_range: list[list[str]] = [[] for _ in range(len(bounds) + 1)]
    for f, run in zip(parts, found, strict=True):
        by_range[bisect.bisect_left(bounds, run) if bounds and run else 0].append(f)
    sqls = []
    for i, files in enumerate(by_range):
        after = bounds[i - 1] if i > 0 else None
        upto = bounds[i] if i < len(bounds) else None
        if sql := _rows_sql(table, files, merged, after=after, upto=upto):
            sqls.append(sql)
    return sqls


def _fsynced(path: Path) -> Path:
    with open(path, "rb+") as f:
        os.fsync(f.fileno())
    return path


def _write_table(con: Any, table: str, sqls: list[str], out: Path) -> list[Path]:
    """Write the rows of ``sqls`` (:func:`_batched_sqls`: each sorted by run, the statements in run order) into
    folder ``out`` as ``<table>-<i>.parquet`` (zstd, no float statistics, row groups of :data:`ROW_GROUP_ROWS`),
    streamed: batches are gathered up to a row group, a file is closed, and the next one begun, at the first row
    group's end past :data:`FILE_BYTES`; each is fsynced. Returns the files written in row order (none: no
    rows)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from rooflake.schema import SCHEMA_VERSION, TABLES
    from rooflake.store.publish import stat_columns

    schema = TABLES[table].with_metadata(
        {**(TABLES[table].metadata or {}), b"rooflake.schema_version": SCHEMA_VERSION.encode()}
    )
    files: list[Path] = []
    sink: Any = None
    writer: Any = None
    held: list[Any] = []

    def flush() -> None:
        nonlocal sink, writer
        if not held:
            return
        if writer is None:
            files.append(out / f"{table}-{len(files)}.parquet")
            sink = pa.OSFile(str(files[-1]), "wb")
            writer = pq.ParquetWriter(
                sink,
                schema,
                compression="zstd",
                write_statistics=stat_columns(schema),
                write_page_checksum=True,  # verified by rl doctor and where a read fails
            )
        writer.write_table(pa.Table.from_batches(held, schema), row_group_size=ROW_GROUP_ROWS)
        held.clear()
        if sink.tell() >= FILE_BYTES:  # whole row groups are written: the file is big enough
            writer.close()
            sink.close()
            writer = None

    try:
        for sql in sqls:
            rel = con.sql(sql)
            for batch in (getattr(rel, "to_arrow_reader", None) or rel.fetch_arrow_reader)(ROW_GROUP_ROWS):
                rows = sum(b.num_rows for b in held)
                take = min(batch.num_rows, ROW_GROUP_ROWS - rows)
                if take:
                    held.append(batch.slice(0, take).cast(schema))
                if rows + take == ROW_GROUP_ROWS:
                    flush()
                    if take < batch.num_rows:
                        held.append(batch.slice(take).cast(schema))
        flush()
    finally:
        if writer is not None:
            writer.close()
        if sink is not None:
            sink.close()
    return [_fsynced(f) for f in files]


def write_generation(
    con: Any, the_plan: Plan, part_files: Callable[[str], list[str]], root: str, out: Path
) -> dict[str, list[Path]]:
    """Write the new generation's files of every table into folder ``out`` (``<table>-<i>.parquet``, one per
    :data:`FILE_BYTES`): the partitions of ``the_plan.parts`` (``part_files(table)``: their files) and the merged
    generations' files (relative to ``root``, a path or URL) without their stale rows of those runs. Returns
    table -> its files in row order, tables with rows only. Raises ``OSError`` or ``duckdb.Error`` when a file
    cannot be read or written."""
    from rooflake.schema.duck import sql_file

    runs = sorted(the_plan.parts)
    con.execute(sql_file(PKG, "compact_parts.sql"), {"runs": runs})
    bounds = runs[BATCH_RUNS - 1 : -1 : BATCH_RUNS]  # (the last run closes no range: the last one is open)
    staged = {}
    for table in ALL_TABLES:
        merged = [f"{root}/{f}" for s in the_plan.merged for f in s.files.get(table, [])]
        sqls = _batched_sqls(table, part_files(table), merged, bounds)
        if files := _write_table(con, table, sqls, out):
            staged[table] = files
    return staged


def compacted_names(gen: str, staged: dict[str, list[Path]]) -> dict[str, list[str]]:
    """Table -> the paths (relative to the store's root) of generation ``gen``'s files: ``<table>/compacted/
    part-<gen>.parquet`` for a table written as one file, ``part-<gen>-<i>.parquet`` (``i`` from 0000, in row
    order) for one written as several."""
    out = {}
    for t, files in staged.items():
        stems = [f"part-{gen}"] if len(files) == 1 else [f"part-{gen}-{i:04d}" for i in range(len(files))]
        out[t] = [f"{t}/{COMPACTED}/{stem}.parquet" for stem in stems]
    return out


def _held_runs(paths: list[str], fs: Any = None) -> frozenset[str]:
    """The run ids in a generation's compacted ``runs`` files (``paths``: local, or ``bucket/key`` on ``fs``)."""
    import pyarrow.parquet as pq

    return frozenset(
        r for p in paths for r in pq.read_table(p, columns=["run_id"], filesystem=fs).column(0).to_pylist()
    )


def _new_manifest(
    old: Manifest, the_plan: Plan, gen: str, files: dict[str, list[str]], rows: int
) -> Manifest:
    """The manifest after writing generation ``gen`` (``files``: :func:`compacted_names`; ``rows``: runs it
    holds)."""
    segments = (*the_plan.kept, Segment(gen, files, rows)) if files else the_plan.kept
    return Manifest.of(gen, segments, old.runs | the_plan.parts)


def _runs_written(staged: dict[str, list[Path]]) -> int:
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(f).metadata.num_rows for f in staged.get("runs", []))


# ---- a local store ------------------------------------------------------------------------------------------
def _parquet_files(root: Path) -> int:
    return sum(1 for t in ALL_TABLES if (root / t).is_dir() for _ in (root / t).glob("*/*.parquet"))


def _partition_runs(root: Path, table: str) -> list[str]:
    """Ids of ``table``'s partition folders (one listing)."""
    try:
        names = os.listdir(root / table)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [n[7:] for n in names if n.startswith("run_id=")]


def _remove_partitions(root: Path, runs: frozenset[str]) -> int:
    """Delete the partitions of ``runs`` (compacted now): every ``runs`` partition first, so each run is read from
    the compacted files from then on, then the data partitions, which no view reads any more. One listing per
    table (a store of 100,000 compacted runs has few folders). Returns the folders removed."""
    n = 0
    for table in ("runs", *DATA_TABLES):
        for run_id in sorted(r for r in _partition_runs(root, table) if r in runs):
            shutil.rmtree(root / table / f"run_id={run_id}")
            n += 1
    return n


def _remove_old_files(root: Path, manifest: Manifest) -> None:
    keep = {root / f for fs in manifest.files.values() for f in fs}
    for table in ALL_TABLES:
        for f in (root / table / COMPACTED).glob("*.parquet") if (root / table / COMPACTED).is_dir() else []:
            if f not in keep:
                f.unlink()


@contextlib.contextmanager
def local_lock(root: Path) -> Iterator[None]:
    """Hold the compaction lock of the store at ``root`` (an exclusive, non-blocking ``flock`` of
    ``STORE/.compact.lock``, which names its holder). Raises :class:`StoreError` naming the store when another
    compaction holds it."""
    import fcntl

    from rooflake.schema import StoreError

    with open(root / LOCK, "a+", encoding="utf-8") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "another process"
            raise StoreError(
                f"store {root}: another rl compact is running on it ({holder}); this one changed nothing"
            ) from None
        try:
            f.seek(0)
            f.truncate()
            f.write(_holder())
            f.flush()
            yield
        finally:
            f.seek(0)
            f.truncate()
            fcntl.flock(f, fcntl.LOCK_UN)


def _holder() -> str:
    stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return f"pid {os.getpid()} on {socket.gethostname()}, since {stamp}"


def _part_files(root: Path, runs: frozenset[str]) -> Callable[[str], list[str]]:
    def files(table: str) -> list[str]:
        return [str(p) for r in sorted(runs) if (p := root / table / f"run_id={r}" / PART).exists()]

    return files


def _compact_locked(root: Path, staging: Path) -> CompactResult:
    """:func:`compact`'s work, holding both locks."""
    from rooflake.store.publish import fsync_dir

    before = _parquet_files(root)
    old = read_manifest(root)
    parts = frozenset(
        r for r in _partition_runs(root, "runs") if (root / "runs" / f"run_id={r}" / PART).exists()
    )
    the_plan = plan(old, parts, lambda s: _held_runs([str(root / f) for f in s.files.get("runs", [])]))
    if the_plan.empty:  # nothing new; finish what a compaction killed after its commit left
        removed = _remove_partitions(root, old.runs)
        _remove_old_files(root, old)
        return CompactResult(
            len(old.runs), removed, before, _parquet_files(root), old.generation, 0, 0, len(old.parts())
        )
    gen = f"{time.time_ns():020d}"
    stage = staging / f"compact.{os.getpid()}.{secrets.token_hex(4)}"
    stage.mkdir()
    try:
        with _connection() as con:
            staged = write_generation(con, the_plan, _part_files(root, parts), str(root), stage)
        names = compacted_names(gen, staged)
        for table, paths in staged.items():
            dest = root / table / COMPACTED
            dest.mkdir(parents=True, exist_ok=True)
            for path, name in zip(paths, names[table], strict=True):
                os.replace(path, root / name)
            fsync_dir(dest)
        written = _runs_written({t: [root / n for n in ns] for t, ns in names.items()})
        manifest = _new_manifest(old, the_plan, gen, names, written)
        write_manifest(root, manifest)
        removed = _remove_partitions(root, manifest.runs)
        _remove_old_files(root, manifest)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    n_seg = len(manifest.parts())
    return CompactResult(
        len(manifest.runs), removed, before, _parquet_files(root), gen, written, len(the_plan.merged), n_seg
    )


def compact(root: Path | str) -> CompactResult:
    """Fold the runs published as partitions since the last compaction of the store at ``root`` into a new
    generation of compacted files, merging small generations into it (see the module docstring), holding the
    compaction lock and the store's flock; a URL (``s3://…``): :func:`compact_remote`. Every query answers as
    before. Raises :class:`StoreError` when ``root`` is no folder (:func:`rooflake.store.layout.existing_root`:
    nothing is created), another compaction of the store is running (nothing changes) or the store cannot be
    written (it is then as before)."""
    import duckdb
    import pyarrow as pa

    from rooflake.schema import StoreError

    if isinstance(root, str):
        from rooflake.store.layout import is_url

        if is_url(root):
            return compact_remote(root)
        root = Path(root)
    from rooflake.store.layout import ensure_root, existing_root
    from rooflake.store.publish import clean_staging, store_lock

    existing_root(root)
    staging = ensure_root(root)
    try:
        with local_lock(root):  # (another compaction running: refused here, before any wait)
            # a --force re-ingest killed between its renames left a run half old, half new: rolled back first (as
            # the next ingest would), never compacted so
            clean_staging(root)
            with store_lock(root):
                return _compact_locked(root, staging)
    except (OSError, duckdb.Error, pa.ArrowException) as e:  # pyarrow reads the compacted runs files
        why = e.strerror if isinstance(e, OSError) and e.strerror else " ".join(str(e).split())
        raise StoreError(f"cannot compact store {root}: {why}") from e


# ---- object storage -----------------------------------------------------------------------------------------
class _Relist(Exception):
    """A file a remote compaction listed was gone when read (another ingest replaced it): list again."""


def _raced(url: str) -> Exception:
    from rooflake.schema import StoreError

    return StoreError(
        f"store {url}: another rl compact committed while this one ran; this one changed nothing "
        "(run it again to fold in what is left)"
    )


def _remote_manifest(url: str) -> tuple[Manifest, str | None]:
    """The committed manifest of the store at ``url`` and its ETag (None: never compacted). Raises
    :class:`DamagedStoreError` when it is damaged, :class:`StoreError` when it cannot be read."""
    from rooflake.store import remote

    fs = remote.filesystem(url)
    path = f"{url.split('://', 1)[1]}/{MANIFEST}"
    with remote.store_errors(url):
        try:  # the ETag first: if the manifest changes before it is read, a commit over this ETag fails
            etag = str(fs.info(path, refresh=True)["ETag"])
            raw = fs.cat_file(path)
        except FileNotFoundError:
            return Manifest(), None
    return parse_manifest(raw, f"{url.rstrip('/')}/{MANIFEST}"), etag


def _take_lock(fs: Any, url: str, path: str, stale_after_s: float) -> str:
    """Put the lock object ``path`` if none exists (``If-None-Match: *``), or over a stale one (``If-Match`` its
    ETag: of two takers one wins). Returns its ETag. Raises :class:`StoreError` when another compaction holds it."""
    from botocore.exceptions import ClientError

    from rooflake.schema import StoreError

    body = _holder().encode()
    try:
        fs.pipe_file(path, body, IfNoneMatch="*")
    except (OSError, ClientError):
        info = fs.info(path, refresh=True)
        age = (datetime.now(timezone.utc) - info["LastModified"]).total_seconds()
        holder = fs.cat_file(path).decode(errors="replace").strip() or "another process"
        busy = StoreError(
            f"store {url}: another rl compact is running on it ({holder}; lock object {url}/{LOCK}, taken over "
            f"after {stale_after_s:.0f} s when its holder was killed); this one changed nothing"
        )
        if age <= stale_after_s:
            raise busy from None
        try:
            fs.pipe_file(path, body, IfMatch=info["ETag"])
        except (OSError, ClientError):
            raise busy from None
    return str(fs.info(path, refresh=True)["ETag"])


@contextlib.contextmanager
def remote_lock(url: str, stale_after_s: float = LOCK_STALE_S) -> Iterator[None]:
    """Hold the compaction lock of the store on object storage at ``url``: the object ``STORE/.compact.lock``,
    put only if none exists (S3's conditional write), naming its holder; one older than ``stale_after_s`` seconds
    (a compaction killed) is taken over. Deleted on exit if it is still this one's. Raises :class:`StoreError`
    naming the store when another compaction holds it."""
    from rooflake.store import remote

    fs = remote.filesystem(url)
    path = f"{url.split('://', 1)[1]}/{LOCK}"
    with remote.store_errors(url):
        etag = _take_lock(fs, url, path, stale_after_s)
    try:
        yield
    finally:
        with contextlib.suppress(Exception):  # taken over meanwhile: the taker's now
            if str(fs.info(path, refresh=True)["ETag"]) == etag:
                fs.rm_file(path)


def _remote_files(snapshot: Any) -> int:
    """Parquet files a snapshot of a remote store reads: committed partitions and compacted files."""
    return sum(len(fs) for fs in snapshot.files.values()) + sum(len(fs) for fs in snapshot.compacted.values())


def _put_manifest(fs: Any, url: str, manifest: Manifest, etag: str | None) -> None:
    """Put ``compacted.json`` only over the one read (ETag ``etag``, or none). Raises :class:`StoreError` when
    another compaction committed since."""
    from botocore.exceptions import ClientError

    cond = {"IfMatch": etag} if etag is not None else {"IfNoneMatch": "*"}
    body = json.dumps(manifest_body(manifest)).encode()
    try:
        fs.pipe_file(f"{url.split('://', 1)[1]}/{MANIFEST}", body, **cond)
    except (OSError, ClientError) as e:
        if _remote_manifest(url)[1] != etag:
            raise _raced(url) from e
        raise


def _commit_remote(
    url: str, snapshot: Any, manifest: Manifest, staged: dict[str, list[Path]], etag: str | None, old: Plan
) -> int:
    """Upload the new generation's files (named by :func:`compacted_names`), put the manifest (the commit), then delete the folded partitions of the
    generation the snapshot saw (``runs`` files first: a newer one, a ``--force`` since, stays and wins) and the
    merged generations' files. On failure before the commit its uploads are deleted. Returns files deleted."""
    from rooflake.store import remote

    fs = remote.filesystem(url)
    base = url.split("://", 1)[1]
    uploaded: list[str] = []
    done = False
    with remote.store_errors(url):
        try:
            names = compacted_names(manifest.generation, staged)
            for t, paths in staged.items():
                for local, name in zip(paths, names[t], strict=True):
                    uploaded.append(f"{base}/{name}")
                    fs.put_file(str(local), uploaded[-1])
            _put_manifest(fs, url, manifest, etag)
            done = True
        finally:
            if not done and uploaded:
                with contextlib.suppress(Exception):
                    fs.rm(uploaded)
        runs_files = [snapshot.files["runs"][r] for r in sorted(old.parts)]
        data = [
            snapshot.files[t][r] for t in DATA_TABLES for r in sorted(old.parts) if r in snapshot.files[t]
        ]
        merged = [f"{base}/{f}" for s in old.merged for fs_ in s.files.values() for f in fs_]
        for batch in (runs_files, data, merged):
            if batch:
                with contextlib.suppress(FileNotFoundError):
                    fs.rm(batch)
    return len(runs_files) + len(data)


def _compact_remote_locked(url: str) -> CompactResult:
    """:func:`compact_remote`'s work, holding the lock object."""
    import tempfile

    import duckdb

    from rooflake.schema import StoreError
    from rooflake.store import remote

    snapshot = remote.Snapshot.take(url)
    old, etag = _remote_manifest(url)
    if etag != snapshot.compaction.etag:
        raise _raced(url)
    fs = remote.filesystem(url)
    base = url.split("://", 1)[1]
    before = _remote_files(snapshot)
    parts = frozenset(snapshot.files["runs"])
    the_plan = plan(old, parts, lambda s: _held_runs([f"{base}/{f}" for f in s.files.get("runs", [])], fs))
    if the_plan.empty:
        return CompactResult(len(old.runs), 0, before, before, old.generation, 0, 0, len(old.parts()))

    def part_files(table: str) -> list[str]:
        return [snapshot.files[table][r] for r in sorted(parts) if r in snapshot.files[table]]

    with tempfile.TemporaryDirectory(prefix="rooflake-compact-") as tmp:
        try:
            with _connection(fs) as con:
                staged = write_generation(con, the_plan, part_files, url, Path(tmp))
        except (OSError, duckdb.Error) as e:
            if _remote_manifest(url)[1] != etag:
                raise _raced(url) from e
            if gone(e):  # a --force re-ingest replaced a partition listed: list again (compact_remote)
                raise _Relist(gist(e)) from e
            raise StoreError(f"cannot compact store {url}: {gist(e)}") from e
        written = _runs_written(staged)
        gen = remote.new_generation()
        manifest = _new_manifest(old, the_plan, gen, compacted_names(gen, staged), written)
        removed = _commit_remote(url, snapshot, manifest, staged, etag, the_plan)
    after = _remote_files(remote.Snapshot.take(url))
    n_seg = len(manifest.parts())
    return CompactResult(
        len(manifest.runs), removed, before, after, manifest.generation, written, len(the_plan.merged), n_seg
    )


def compact_remote(url: str, stale_after_s: float = LOCK_STALE_S) -> CompactResult:
    """Compact the store on object storage at ``url`` (see the module docstring): take the lock object, list the
    store (:class:`rooflake.store.remote.Snapshot`), write the new generation's rows to local temporary files (as
    :func:`compact` does), upload them, put ``compacted.json`` over the manifest listed (the commit), then delete
    the partitions it folded in and the generations it merged. Ingests meanwhile are safe (a run published or
    re-ingested after the listing keeps its partitions, which win); readers see the store before or after (a
    reader whose listing went stale lists again: ``database.Database.refresh``). Raises :class:`StoreError` naming
    the store when another compaction holds the lock or committed meanwhile (nothing changed), or when the store
    cannot be read or written."""
    import pyarrow as pa

    from rooflake.schema import StoreError

    with remote_lock(url, stale_after_s):
        for attempt in range(RELIST + 1):
            try:
                return _compact_remote_locked(url)
            except _Relist as e:  # files listed were replaced meanwhile: over a new listing
                if attempt == RELIST:
                    raise StoreError(
                        f"cannot compact store {url}: runs were re-ingested (--force) while it ran, {RELIST + 1} "
                        f"times; it changed nothing: run it again ({e})"
                    ) from e
            # pyarrow reads the compacted runs files (_held_runs, _runs_written)
            except (OSError, pa.ArrowException) as e:
                raise StoreError(f"cannot compact store {url}: {gist(e)}") from e
    raise AssertionError("unreachable")  # (the loop returns or raises)
