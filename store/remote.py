"""A store on object storage (``s3://bucket/prefix``): the layout of docs/architecture.md section 3 where nothing can be renamed.

Object stores have no rename and no lock, but every PUT of one object is atomic and every read after it sees it
(S3's strong read-after-write consistency; MinIO, Ceph and moto alike). So a file, once written, is never written
again: each publish of a run writes its files under a name of its own, a *generation*::

    STORE/<table>/run_id=<id>/part-<gen>.parquet        gen = <16 hex digits: ns since the epoch>-<8 random hex>

Publish (:func:`publish`): every data table's file is uploaded first, the ``runs`` file of the same generation last;
that one PUT is the commit. A run's committed generation is the greatest generation among its ``runs`` files, and
a data file counts only when its generation is the committed one (:class:`Snapshot` lists the store and names
exactly those files to DuckDB, polars or Spark). Hence:

- a half-written run (a writer killed, a failed upload) is never seen: no ``runs`` file names its generation;
  a failed publish deletes what it uploaded, so the store is as before; a killed writer's uploads are deleted by
  the next :func:`clean` once older than :data:`STALE_AFTER_S` (no process id to probe on another machine);
- ``--force`` writes a new generation beside the old one (greater: at least the old one's time + 1 ns, whatever
  the writer's clock) and deletes the old files after its commit, so readers see the old run or the new one,
  whole; a failed ``--force`` leaves the old run in place;
- concurrent publishers of different runs never touch the same object; of the same run, the greater generation
  wins for every reader, and the files of the lesser one are deleted as superseded.

Endpoint and credentials come from the usual AWS settings (``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL``,
``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/``AWS_SESSION_TOKEN``, ``AWS_PROFILE``, ``AWS_REGION``), read by
botocore through ``s3fs``. DuckDB reads the files through the same fsspec filesystem
(``DuckDBPyConnection.register_filesystem``: no extension to download), polars and Spark natively from
:func:`storage_options` and :meth:`Snapshot.table_files`.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import secrets
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rooflake.schema import StoreError
from rooflake.schema.duck import DuckTable, duck_connect, sql_str
from rooflake.store.layout import ALL_TABLES, COMPACTED, DATA_TABLES, GLOB_CHARS, URL, is_url  # noqa: F401 (re-exported: remote.is_url)
from rooflake.store.publish import PublishResult, write_part

if TYPE_CHECKING:  # imported where used: reading a store needs no pyarrow (start-up time)
    import pyarrow as pa

SCHEMES = ("s3",)
# a killed writer's uploads are deleted by clean() once older than this (an upload in flight is younger)
STALE_AFTER_S = 3600.0
# a Snapshot of at most this many runs lists their partitions (8 small listings each), not the whole store
FEW_RUNS = 16
# a committed compaction (the format of rooflake.store.compact: generation, files per table relative to the root,
# runs), and the folder of its files, STORE/<table>/compacted/part-<gen>.parquet
MANIFEST = "compacted.json"
COMPACTED_FILE = re.compile(r"^(?P<table>[a-z_]+)/compacted/part-(?P<gen>[^/]+)\.parquet$")
FILE = re.compile(
    r"^(?P<table>[a-z_]+)/run_id=(?P<run>[^/]+)/part-(?P<gen>[0-9a-f]{16}-[0-9a-f]{8})\.parquet$"
)


def normalize(url: str) -> str:
    """``url`` as the store's root URL, ``s3://bucket/prefix`` without a trailing slash. Raises
    :class:`StoreError` for another scheme, a missing bucket, or a glob character."""
    m = URL.match(url)
    if m is None or m.group("scheme") not in SCHEMES:
        raise StoreError(f"store {url}: only local paths and s3://bucket/prefix are supported")
    path = m.group("path").strip("/")
    if not path:
        raise StoreError(f"store {url}: name a bucket (s3://bucket or s3://bucket/prefix)")
    if any(c in path for c in GLOB_CHARS):
        raise StoreError(f"store path {url} contains a glob character (* ? [ ] {{ }}): choose another path")
    return f"{m.group('scheme')}://{path}"


def endpoint_url() -> str | None:
    """The S3 endpoint from the environment (``AWS_ENDPOINT_URL_S3``, else ``AWS_ENDPOINT_URL``), or None (AWS)."""
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None


#: the time limits of every request to the object store, and how many times one is tried: environment variable
#: -> (default, smallest value). An endpoint that accepts connections and never answers ends a command after
#: about ``attempts x (connect + read)`` seconds per request, with one error line
LIMITS = {
    "RL_S3_CONNECT_TIMEOUT_S": (5.0, 0.01),  # seconds to open a connection
    "RL_S3_READ_TIMEOUT_S": (30.0, 0.01),  # seconds to wait for an answer's next bytes
    "RL_S3_ATTEMPTS": (3.0, 1.0),  # tries of one request (retried: a timeout, a dropped connection, SlowDown)
}


@dataclass(frozen=True)
class Limits:
    """The time limits and attempts of requests to the object store (:data:`LIMITS`)."""

    connect_s: float
    read_s: float
    attempts: int

    @classmethod
    def from_env(cls) -> Limits:
        """The limits from the environment (:data:`LIMITS`' defaults where unset). Raises :class:`StoreError`
        naming the variable when a value is not a number, or below its smallest value."""
        values = []
        for name, (default, least) in LIMITS.items():
            raw = os.environ.get(name, "").strip()
            try:
                value = float(raw) if raw else default
            except ValueError:
                value = float("nan")
            if not value >= least or value == float("inf"):  # (NaN fails too)
                raise StoreError(
                    f"${name} is {raw!r}: give a number of at least {least:g} (default {default:g})"
                )
            values.append(value)
        return cls(values[0], values[1], int(values[2]))

    def describe(self) -> str:
        """The limits as the error of a store that does not answer names them."""
        return (
            f"{self.attempts} attempt(s), each {self.connect_s:g} s to connect and {self.read_s:g} s to answer; "
            f"change with $RL_S3_ATTEMPTS, $RL_S3_CONNECT_TIMEOUT_S, $RL_S3_READ_TIMEOUT_S"
        )


def _session() -> Any:
    """An aiobotocore session whose PUTs send no ``Expect: 100-continue``: aiohttp waits for the ``100 Continue``
    with no time limit, so a PUT to an endpoint that never answers hung past every timeout; without it the body is
    sent and the answer waited for under the read timeout."""
    import aiobotocore.session
    from botocore.handlers import add_expect_header

    session = aiobotocore.session.AioSession()
    session.unregister("before-call.s3", add_expect_header)
    return session


@functools.lru_cache(maxsize=4)
def _filesystem(scheme: str, endpoint: str | None, pid: int, limits: Limits) -> Any:
    try:
        import fsspec
        import s3fs  # noqa: F401 - the implementation fsspec loads for s3
    except ImportError as e:
        raise StoreError(f"an {scheme}:// store needs s3fs: pip install 'rooflake[s3]' ({e})") from None
    config = {
        "connect_timeout": limits.connect_s,
        "read_timeout": limits.read_s,
        "retries": {"max_attempts": 1, "mode": "standard"},  # s3fs retries: attempts counted once
    }
    kwargs: dict[str, Any] = {"skip_instance_cache": True, "config_kwargs": config, "session": _session()}
    if endpoint:
        kwargs["endpoint_url"] = endpoint
    fs = fsspec.filesystem(scheme, **kwargs)
    fs.retries = limits.attempts  # (s3fs's own retry of a request: a class attribute, no argument)
    return fs


def filesystem(url: str) -> Any:  # -> fsspec.AbstractFileSystem
    """The fsspec filesystem of store ``url`` (``s3fs.S3FileSystem``; endpoint from :func:`endpoint_url`, listings
    never cached: another process may have published since; every request under the time limits of
    :class:`Limits`, tried at most its ``attempts`` times). One per process and setting. Raises
    :class:`StoreError` when ``s3fs`` is not installed or a limit's variable is wrong (:meth:`Limits.from_env`)."""
    return _filesystem(url.split("://", 1)[0], endpoint_url(), os.getpid(), Limits.from_env())


def storage_options() -> dict[str, str]:
    """Options for polars' (object_store's) native S3 reader: the endpoint (and ``aws_allow_http`` for an
    ``http://`` one) and region from the environment; credentials it reads from the environment itself."""
    out = {}
    if endpoint := endpoint_url():
        out["aws_endpoint_url"] = endpoint
        if endpoint.startswith("http://"):
            out["aws_allow_http"] = "true"
    if region := os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION"):
        out["aws_region"] = region
    return out


def _bucket_path(url: str) -> str:
    return url.split("://", 1)[1]


@contextlib.contextmanager
def store_errors(url: str) -> Iterator[None]:
    """Turn what the object store or its client raise (``OSError`` from s3fs, botocore's errors: no credentials,
    no connection, no answer within :class:`Limits`) into :class:`StoreError` naming the store."""
    import asyncio

    from botocore.exceptions import BotoCoreError

    try:
        yield
    except FileNotFoundError as e:
        raise StoreError(f"store {url}: {e} (does the bucket exist?)") from e
    except (OSError, BotoCoreError, TimeoutError, asyncio.TimeoutError) as e:
        if timed_out(e):
            raise StoreError(
                f"store {url}: the object store did not answer ({Limits.from_env().describe()})"
            ) from e
        raise StoreError(f"store {url}: {' '.join(str(e).split()) or type(e).__name__}") from e


def timed_out(error: BaseException) -> bool:
    """Whether ``error`` (or one it was raised from) is a request to the object store that timed out."""
    import asyncio

    from botocore.exceptions import ConnectTimeoutError, ReadTimeoutError

    seen: set[int] = set()
    e: BaseException | None = error
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, (ConnectTimeoutError, ReadTimeoutError, TimeoutError, asyncio.TimeoutError)):
            return True
        e = e.__cause__ or e.__context__
    return False


# ---- listing ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Upload:
    """One file of the store: ``table``, ``run_id``, generation ``gen``, object ``path`` (``bucket/key``),
    ``modified`` (the server's time of its PUT)."""

    table: str
    run_id: str
    gen: str
    path: str
    modified: datetime | None


def _scan(fs: Any, base: str, *unders: str) -> list[Upload]:
    """Every store file under ``base/<under>`` for each of ``unders`` (all of ``base`` when none), the recursive
    listings made concurrently; objects of other names are ignored."""
    import asyncio

    from fsspec.asyn import sync

    paths = [f"{base}/{u}".rstrip("/") for u in unders or ("",)]
    # another process may have written since: list afresh. The listing fills s3fs' cache, which the reads of the
    # listed files (DuckDB's opens, each an info() call) then use: names are never reused, so it stays right
    fs.invalidate_cache()

    async def find_all() -> list[dict[str, Any]]:
        return list(await asyncio.gather(*(fs._find(p, detail=True) for p in paths)))

    out = []
    for found in sync(fs.loop, find_all):
        for path, info in found.items():
            m = FILE.match(path[len(base) + 1 :])
            if m:
                out.append(Upload(m["table"], m["run"], m["gen"], path, info.get("LastModified")))
    return out


def _scan_compacted(fs: Any, base: str) -> list[Upload]:
    """Every compacted file (``<table>/compacted/part-<gen>.parquet``), as :class:`Upload` rows with run id ``""``."""
    import asyncio

    from fsspec.asyn import sync

    fs.invalidate_cache()

    async def find_all() -> list[dict[str, Any]]:
        paths = [f"{base}/{t}/{COMPACTED}" for t in ALL_TABLES]
        return list(await asyncio.gather(*(fs._find(p, detail=True) for p in paths)))

    out = []
    for found in sync(fs.loop, find_all):
        for path, info in found.items():
            if m := COMPACTED_FILE.match(path[len(base) + 1 :]):
                out.append(Upload(m["table"], "", m["gen"], path, info.get("LastModified")))
    return out


def committed(files: list[Upload]) -> dict[str, str]:
    """``{run_id: committed generation}``: per run, the greatest generation of its ``runs`` files."""
    out: dict[str, str] = {}
    for f in files:
        if f.table == "runs" and f.gen > out.get(f.run_id, ""):
            out[f.run_id] = f.gen
    return out


@dataclass(frozen=True)
class Compaction:
    """A committed compaction of a store on object storage (``STORE/compacted.json``): ``generation``, ``files``
    (table -> paths relative to the store's root), ``runs`` (the run ids its files hold), ``etag`` (of the
    manifest object as read; None when there is none: the next compaction commits only over this one)."""

    generation: str = ""
    files: dict[str, list[str]] = field(default_factory=dict)
    runs: frozenset[str] = frozenset()
    etag: str | None = None


def read_compaction(url: str) -> Compaction:
    """The committed compaction of the store at ``url`` (an empty one when it was never compacted). Raises
    :class:`StoreError` when the store cannot be read, :class:`DamagedStoreError` when its ``compacted.json`` is
    damaged (:func:`rooflake.store.manifest.parse_manifest`)."""
    from rooflake.store.manifest import parse_manifest

    fs = filesystem(url)
    path = f"{_bucket_path(url)}/{MANIFEST}"
    with store_errors(url):
        try:  # the ETag first: if the manifest changes before it is read, a commit over this ETag fails
            etag = str(fs.info(path, refresh=True)["ETag"])
            raw = fs.cat_file(path)
        except FileNotFoundError:
            return Compaction()
    m = parse_manifest(raw, f"{url.rstrip('/')}/{MANIFEST}")
    return Compaction(m.generation, m.files, m.runs, etag)


@dataclass(frozen=True)
class Snapshot:
    """What a store on object storage held when listed: its ``url``; per table, the committed files of the runs
    published as partitions (``files``: ``{table: {run_id: url}}``, one file per run, of its committed generation;
    ``generations``: ``{run_id: committed generation}``); the committed compaction (``compacted``: table -> URLs of
    its files; ``compacted_runs``: the runs it holds). A run is read from its partitions while it has a committed
    ``runs`` file, else from the compacted files if they hold it (as on a local store, rooflake.store.compact)."""

    url: str
    files: dict[str, dict[str, str]]
    generations: dict[str, str] = field(default_factory=dict)
    compacted: dict[str, list[str]] = field(default_factory=dict)
    compacted_runs: frozenset[str] = frozenset()
    compaction: Compaction = field(default_factory=Compaction)

    @classmethod
    def take(cls, url: str, only_runs: list[str] | None = None) -> Snapshot:
        """List the store at ``url``: each table's folder (concurrently), or with ``only_runs`` (up to
        :data:`FEW_RUNS` of them) just those runs' partitions. Raises :class:`StoreError` when it cannot be
        listed."""
        fs = filesystem(url)
        if only_runs is not None and len(only_runs) <= FEW_RUNS:
            unders = [f"{t}/run_id={r}" for r in only_runs for t in ALL_TABLES]
        else:
            unders = list(ALL_TABLES)
        with store_errors(url):
            found = _scan(fs, _bucket_path(url), *unders) if unders else []
        compaction = read_compaction(url)
        gens = committed(found)
        files: dict[str, dict[str, str]] = {t: {} for t in ALL_TABLES}
        for f in found:
            if f.table in files and gens.get(f.run_id) == f.gen:
                files[f.table][f.run_id] = f"{url.split('://', 1)[0]}://{f.path}"
        held = compaction.runs if only_runs is None else compaction.runs & set(only_runs)
        compacted = {t: [f"{url}/{p}" for p in ps] for t, ps in compaction.files.items()} if held else {}
        return cls(url, files, gens, compacted, frozenset(held), compaction)

    def run_ids(self) -> list[str]:
        """Sorted ids of the published runs (as partitions, or held by the compaction)."""
        return sorted(set(self.files["runs"]) | self.compacted_runs)

    def published(self) -> dict[str, str]:
        """``{run_id: "partition" | "compacted"}``: where each published run is read from."""
        out = dict.fromkeys(self.compacted_runs, "compacted")
        out.update(dict.fromkeys(self.files["runs"], "partition"))
        return out

    def table_files(self, table: str, only_runs: list[str] | None = None) -> list[str]:
        """URLs of ``table``'s committed files (of ``only_runs``' runs when given), sorted by run id."""
        runs = self.files[table]
        ids = sorted(runs) if only_runs is None else [r for r in only_runs if r in runs]
        return [runs[r] for r in ids]

    def key(self) -> tuple[tuple[str, ...], ...]:
        """A value that changes whenever a run is published, replaced or dropped, or the store compacted (for
        caching a database)."""
        parts = tuple(tuple(sorted(self.files[t].values())) for t in ALL_TABLES)
        return (
            *parts,
            tuple(sorted(f for fs in self.compacted.values() for f in fs)),
            tuple(self.compacted_runs),
        )

    def sources(self, only_runs: list[str] | None) -> dict[str, str | None]:
        """Per table, the ``read_parquet`` file argument of its DuckDB view (a list of quoted URLs), or None when
        it has no file (every table None when no run is published)."""
        if not self.files["runs"]:
            return dict.fromkeys(ALL_TABLES)
        out = {}
        for t in ALL_TABLES:
            urls = self.table_files(t, only_runs)
            out[t] = "[" + ", ".join(f"'{sql_str(u)}'" for u in urls) + "]" if urls else None
        return out

    def register(self, con: Any) -> None:
        """Let DuckDB connection ``con`` read ``s3://`` paths through this store's fsspec filesystem."""
        con.register_filesystem(filesystem(self.url))

    def allowed_directory(self) -> str:
        """The prefix a locked-down DuckDB database may read (``allowed_directories``): the store's URL + ``/``."""
        return self.url + "/"


def run_ids(url: str) -> list[str]:
    """Sorted ids of the runs published in the store at ``url`` (one listing of ``runs/``, and the runs the
    compaction holds)."""
    fs = filesystem(url)
    with store_errors(url):
        parts = committed(_scan(fs, _bucket_path(url), "runs"))
    return sorted(set(parts) | read_compaction(url).runs)


def run_generation(url: str, run_id: str) -> str | None:
    """The committed generation of run ``run_id``'s partitions, or None when it has none."""
    fs = filesystem(url)
    with store_errors(url):
        return committed(_scan(fs, _bucket_path(url), f"runs/run_id={run_id}")).get(run_id)


def is_published(url: str, run_id: str) -> bool:
    """Whether run ``run_id`` is in the store at ``url``: as partitions, or held by the compaction."""
    return run_generation(url, run_id) is not None or run_id in read_compaction(url).runs


# ---- writing ------------------------------------------------------------------------------------------------
def new_generation(after: str | None = None) -> str:
    """A fresh generation name, ``<16 hex digits: ns since the epoch>-<8 random hex digits>``, greater than
    ``after`` (a run's committed generation) even when this machine's clock is behind the one that wrote it."""
    ns = time.time_ns()
    if after is not None:
        ns = max(ns, int(after.split("-", 1)[0], 16) + 1)
    return f"{ns:016x}-{secrets.token_hex(4)}"


def part_path(url: str, table: str, run_id: str, gen: str) -> str:
    """The object (``bucket/key``) of ``table``'s file of run ``run_id``, generation ``gen``."""
    return f"{_bucket_path(url)}/{table}/run_id={run_id}/part-{gen}.parquet"


def check_writable(url: str) -> None:
    """Raise :class:`StoreError` unless the store at ``url`` can be written (a probe object is put and deleted:
    the bucket exists, the credentials may write under the prefix)."""
    fs = filesystem(url)
    probe = f"{_bucket_path(url)}/.rooflake-probe.{os.getpid()}.{secrets.token_hex(4)}"
    with store_errors(url):
        fs.pipe_file(probe, b"")
        fs.rm_file(probe)


def _upload(
    fs: Any, url: str, run_id: str, gen: str, tables: dict[str, pa.Table | DuckTable], done: list[str]
) -> None:
    """Write every non-empty data table of the run, then (last: the commit) its ``runs`` table, each to a local
    temporary file (:func:`rooflake.store.publish.write_part`) uploaded as generation ``gen``; each object is
    appended to ``done`` before its PUT (so that the caller can delete what a failure left). Raises what writing
    or uploading raises (``OSError``, botocore's errors, ``duckdb.Error`` from a reader's query)."""
    with tempfile.TemporaryDirectory(prefix="rooflake-upload-") as tmp:
        for name in (*DATA_TABLES, "runs"):
            table = tables.get(name)
            if table is None or (name != "runs" and table.num_rows == 0):
                continue
            local = Path(tmp) / f"{name}.parquet"
            write_part(table, local)
            dest = part_path(url, name, run_id, gen)
            done.append(dest)  # before the PUT: a PUT that fails after the server stored it is deleted too
            fs.put_file(str(local), dest)
            local.unlink()


def _delete(fs: Any, paths: list[str]) -> None:
    """Delete ``paths`` (a batch request per 1,000); what is already gone is no error."""
    if paths:
        with contextlib.suppress(FileNotFoundError):
            fs.rm(paths)


def drop_superseded(url: str, run_id: str, gen: str) -> int:
    """Delete run ``run_id``'s files of generations older than ``gen`` (its committed one), every table; files of
    newer generations (a writer in flight) stay. Returns how many were deleted."""
    fs = filesystem(url)
    base = _bucket_path(url)
    old = [f.path for f in _scan(fs, base, *(f"{t}/run_id={run_id}" for t in ALL_TABLES)) if f.gen < gen]
    # data files first, runs last: a reader never sees an older runs file without its data
    old.sort(key=lambda p: "/runs/run_id=" in p)
    _delete(fs, old)
    return len(old)


def publish(
    url: str, run_id: str, tables: dict[str, pa.Table | DuckTable], *, force: bool = False
) -> PublishResult:
    """Write one run to the store at ``url`` (see the module docstring): data tables, then the ``runs`` file that
    commits them, all of a new generation; then the run's older generations are deleted. ``tables`` must hold
    ``runs``; an absent or empty data table writes no file. If the run is published and not ``force``, nothing is
    written (status ``exists``, also when another writer commits it first). Status ``ingested`` or ``replaced``
    otherwise. Raises :class:`StoreError` when the store cannot be written; what this call uploaded is then
    deleted, and the store is as before."""
    if tables.get("runs") is None:
        raise StoreError(f"run {run_id}: no runs row to publish")
    fs = filesystem(url)
    with store_errors(url):
        before = run_generation(url, run_id)
        existed = before is not None or run_id in read_compaction(url).runs
        if existed and not force:
            return PublishResult(run_id, "exists")
        gen = new_generation(before)
        data = {k: v for k, v in tables.items() if k != "runs"}
        uploaded: list[str] = []  # objects this call wrote (or tried to)
        committed_ = False
        try:
            _upload(fs, url, run_id, gen, data, uploaded)
            if not force and is_published(url, run_id):  # another writer committed it meanwhile
                return PublishResult(run_id, "exists")
            _upload(fs, url, run_id, gen, {"runs": tables["runs"]}, uploaded)
            committed_ = True
        finally:
            if not committed_:  # best effort: leftovers are invisible, and clean() removes them
                with contextlib.suppress(Exception):
                    _delete(fs, uploaded)
        drop_superseded(url, run_id, gen)
    return PublishResult(run_id, "replaced" if existed else "ingested")


def stale(files: list[Upload], now: datetime, stale_after_s: float = STALE_AFTER_S) -> list[Upload]:
    """The files :func:`clean` deletes: those of a generation older than its run's committed one (superseded),
    and those of an uncommitted generation (no ``runs`` file names it: a writer killed or failed) uploaded more
    than ``stale_after_s`` seconds before ``now`` (server times: S3 refuses requests from clocks more than 15
    minutes off, so an hour leaves a writer in flight alone)."""
    gens = committed(files)

    def dead(f: Upload) -> bool:
        current = gens.get(f.run_id)
        if current is not None and f.gen < current:
            return True
        age = (now - f.modified).total_seconds() if f.modified is not None else 0.0
        return current != f.gen and age > stale_after_s

    out = [f for f in files if dead(f)]
    return out


def clean(url: str, stale_after_s: float = STALE_AFTER_S) -> int:
    """Delete the superseded and stale uploads of the store at ``url`` (:func:`stale`), and stale compacted files
    no compaction names. Returns how many generations (a run's files of one publish) and compacted files were
    removed."""
    fs = filesystem(url)
    with store_errors(url):
        try:
            files = _scan(fs, _bucket_path(url), *ALL_TABLES)
        except FileNotFoundError:
            return 0
        drop = stale(files, datetime.now(timezone.utc), stale_after_s)
        drop.sort(key=lambda f: f.table == "runs")
        orphans = _orphans(fs, url, stale_after_s)
        _delete(fs, [f.path for f in drop] + orphans)
    return len({(f.run_id, f.gen) for f in drop}) + len(orphans)


def _orphans(fs: Any, url: str, stale_after_s: float) -> list[str]:
    """Compacted files no committed compaction names, uploaded more than ``stale_after_s`` seconds ago (a
    compaction killed before its commit, or the files of an older one)."""
    now = datetime.now(timezone.utc)
    return [f.path for f in _unnamed(fs, url, read_compaction(url)) if _older(f, now, stale_after_s)]


def _unnamed(fs: Any, url: str, compaction: Compaction) -> list[Upload]:
    """The compacted files ``compaction`` (the committed one) does not name, by path."""
    base = _bucket_path(url)
    named = {f"{base}/{p}" for ps in compaction.files.values() for p in ps}
    return sorted((f for f in _scan_compacted(fs, base) if f.path not in named), key=lambda f: f.path)


def _older(f: Upload, now: datetime, seconds: float) -> bool:
    """Whether ``f`` was uploaded more than ``seconds`` before ``now`` (an object store always says when)."""
    return f.modified is not None and (now - f.modified).total_seconds() > seconds


# ---- checking -----------------------------------------------------------------------------------------------
def _counts(fs: Any, url: str, runs_file: str) -> list[dict[str, Any]]:
    """The ``runs`` row(s) of a readable runs file: run id and row counts."""
    import pyarrow.parquet as pq

    return pq.read_table(runs_file, columns=["run_id", "n_kernels", "n_metrics"], filesystem=fs).to_pylist()


def _problem(f: Upload, url: str, problem: str, error: str) -> dict[str, str]:
    path = f"{url.split('://', 1)[0]}://{f.path}"
    return {"table": f.table, "run_id": f.run_id, "path": path, "problem": problem, "error": error}


def _leftover(f: Upload, gens: dict[str, str], dead: set[str]) -> dict[str, str]:
    """The doctor's row for a file of a generation no reader uses."""
    if f.path not in dead:
        why = "no runs file commits its generation: a publish in flight, or a writer killed within the hour"
        return {"problem": "unpublished", "error": why}
    if f.gen < gens.get(f.run_id, ""):
        why = "superseded by a newer publish of the run; the next ingest deletes it"
    else:
        why = "uploaded by a writer that never committed (killed or failed); the next ingest deletes it"
    return {"problem": "stale-staging", "error": why}


def doctor(url: str) -> pa.Table:
    """Check every file of the store at ``url``, like :func:`rooflake.store.doctor.doctor` (same columns:
    ``table``, ``run_id``, ``path``, ``problem``, ``error``): each committed file read whole (``damaged``,
    ``other-columns``), published runs whose counts name a kernels or metrics file that is not there
    (``missing``), files of an uncommitted generation (``unpublished``: younger than :data:`STALE_AFTER_S`) and
    files :func:`clean` deletes (``stale-staging``: superseded or stale uploads). The files of the committed
    compaction (``compacted.json``) are read whole too (``damaged``, ``other-columns``, with an empty ``run_id``: each
    holds many runs), and compacted files it does not name are ``unpublished`` (a compaction in flight, younger than
    :data:`STALE_AFTER_S`) or ``stale-staging`` (:func:`clean` deletes them). Raises :class:`StoreError` when the
    store cannot be listed."""
    import pyarrow as pa

    from rooflake.store.doctor import PROBLEMS, read_error

    fs = filesystem(url)
    with store_errors(url):
        files = _scan(fs, _bucket_path(url), *ALL_TABLES)
        gens = committed(files)
        dead = {f.path for f in stale(files, datetime.now(timezone.utc))}
        con = duck_connect()
        con.register_filesystem(fs)
        have = {(f.table, f.run_id) for f in files if gens.get(f.run_id) == f.gen}
        rows: list[dict[str, str]] = []
        for f in sorted(files, key=lambda f: (f.table, f.run_id, f.gen)):
            if gens.get(f.run_id) != f.gen:
                rows.append({**_problem(f, url, "", ""), **_leftover(f, gens, dead)})
                continue
            found = read_error(con, f.table, f"{url.split('://', 1)[0]}://{f.path}", fs)
            if found is not None:
                rows.append(_problem(f, url, *found))
                continue
            for r in _counts(fs, url, f.path) if f.table == "runs" else []:
                for t, n in (("kernels", r["n_kernels"]), ("metrics", r["n_metrics"])):
                    if n and (t, f.run_id) not in have:
                        miss = Upload(t, f.run_id, f.gen, part_path(url, t, f.run_id, f.gen), None)
                        why = f"the runs row counts {n} {t} rows; the file does not exist"
                        rows.append(_problem(miss, url, "missing", why))
        rows += _compacted_problems(fs, url, con)
    return pa.Table.from_pylist(rows, schema=PROBLEMS)


def _compacted_problems(fs: Any, url: str, con: Any) -> list[dict[str, str]]:
    """The doctor's rows for compacted files: each file the committed compaction names, read whole (damaged or
    absent: ``damaged``; written with other columns: ``other-columns``), and each compacted file it does not name
    (:func:`_orphans`' files, and the younger ones: a compaction in flight); a damaged ``compacted.json`` is one
    ``damaged`` row (which files it names is then unknown)."""
    from rooflake.schema import DamagedStoreError
    from rooflake.store.doctor import read_error

    base, scheme = _bucket_path(url), url.split("://", 1)[0]
    try:
        compaction = read_compaction(url)
    except DamagedStoreError as e:
        return [_problem(Upload("", "", "", f"{base}/{MANIFEST}", None), url, "damaged", str(e))]
    rows = []
    for table, paths in sorted(compaction.files.items()):
        for p in paths:
            f = Upload(table, "", compaction.generation, f"{base}/{p}", None)
            found = read_error(con, table, f"{scheme}://{f.path}", fs)
            if found is not None:
                rows.append(_problem(f, url, *found))
    now = datetime.now(timezone.utc)
    for f in _unnamed(fs, url, compaction):
        if _older(f, now, STALE_AFTER_S):
            why = (
                "a compacted file no committed compaction names (one killed before its commit, or an older one's): "
                "the next ingest deletes it"
            )
            rows.append(_problem(f, url, "stale-staging", why))
        else:
            why = (
                "a compacted file no committed compaction names yet: a compaction in flight, or one killed within "
                "the hour"
            )
            rows.append(_problem(f, url, "unpublished", why))
    return rows
