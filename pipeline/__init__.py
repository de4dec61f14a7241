"""rooflake.pipeline: ingest of files and folders into a store (worker processes, progress, results).

:func:`expand_paths` turns the user's arguments (files, directories, globs) into report files; :func:`ingest_file`
reads one file (:func:`rooflake.ingest.open_run`) and publishes it as one run (:meth:`rooflake.store.Store.publish`);
:func:`ingest_paths` ingests many, in worker processes when there are several, and yields one
:class:`IngestResult` per file.

One process reads at most one ``.ncu-rep``: ``ncu_report`` never frees what it read (RSS grows ~6x the bytes) and
carries state from one report into the next (wrong units for some metrics of every later report). Workers come
from a fork server that has already imported ``ncu_report``, pyarrow, this module and the main script's rooflake
modules (:func:`main_script_modules`), and done the per-process set-up once (:mod:`rooflake.pipeline.warm`), so a
fresh process per report costs milliseconds, and memory stays flat in the number of reports;
:func:`rooflake.pipeline.isolated.run_isolated` keeps one started ahead, and reports a worker that died.
"""

from __future__ import annotations

import contextlib
import functools
import glob as _glob
import os
import resource
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rooflake.ingest import (
    FORMATS_READ,
    PRELOAD,
    READABLE,
    begin,
    detect_format,
    file_sha256,
    mp_context,
    open_run,
    source_bytes,
)
from rooflake.ingest.messages import path_text
from rooflake.ingest.ranks import labelled_rank
from rooflake.pipeline.isolated import run_isolated
from rooflake.schema import InputError, RooflakeError, StoreError, UnsupportedFormatError
from rooflake.schema.catalog import FP16_CONVENTIONS
from rooflake.schema.duck import DuckTable, duck_row
from rooflake.schema.errors import WorkerError
from rooflake.store import Store

if TYPE_CHECKING:
    import pyarrow as pa

WORKER_PRELOAD = [*PRELOAD, "rooflake.store", "rooflake.pipeline", "rooflake.pipeline.warm"]
# an empty file in a folder is a report only when named like one (an empty .ncu-rep is a broken report to flag; an
# empty __init__.py or .keep is nothing)
REPORT_SUFFIXES = (".ncu-rep", ".nsys-rep", ".qdrep", ".sqlite")


@dataclass
class IngestResult:
    """Summary of one ingested file (one line of ``rl ingest`` output).

    ``status``: ``ingested`` | ``replaced`` | ``exists`` | ``error`` (``error`` holds the message, which names the
    file) | ``store-error`` (the store cannot be written: :func:`ingest_paths` raises it instead). Counts are
    rows of the run's tables; ``peak_rss_mb`` (MiB) is of the process that read the file; ``warnings``: the rows the
    reader flagged (reversed or negative times, duplicate correlation ids...), one line each."""

    path: str
    run_id: str | None
    status: str
    kernels: int | None = None
    metrics: int | None = None
    gpu_name: str | None = None
    error: str | None = None
    ranges: int | None = None
    note: str | None = None
    warnings: list[str] | None = None
    peak_rss_mb: float | None = None

    def as_dict(self) -> dict[str, Any]:
        """The fields as a JSON-ready dict (one object of ``rl ingest --json``)."""
        return asdict(self)


@functools.cache
def rooflake_version() -> str:
    """The installed rooflake version, ``unknown`` when running from a source tree. Read once per process (the
    package metadata look-up takes 20-35 ms: a worker would pay it per report, see :mod:`rooflake.pipeline.worker`)."""
    try:
        return version("rooflake")
    except PackageNotFoundError:
        return "unknown"


def _runs_table(out: dict[str, Any], row: dict[str, Any]) -> pa.Table | DuckTable:
    """The run's ``runs`` row: built by the reader's DuckDB when it has one (no pandas import by pyarrow, see
    :func:`duck_row`), else by pyarrow."""
    from rooflake.schema import RUNS  # a pyarrow schema: the parent of the ingest workers never needs it

    con = next((t.con for t in out.values() if isinstance(t, DuckTable)), None)
    if con is not None:
        return duck_row(con, RUNS, row)
    import pyarrow as pa

    from rooflake.schema.without_pandas import pyarrow_without_pandas

    with pyarrow_without_pandas():
        return pa.table({f.name: [row.get(f.name)] for f in RUNS}, schema=RUNS)


# runs columns a caller may set at ingest (rl profile knows the command it ran and the host); the rest come from the
# file or from the ingest itself (identity, counts, versions)
RUN_FIELDS = ("command_line", "host", "producer", "gpu_name", "compute_capability")


def _run_fields(fields: dict[str, Any] | None) -> dict[str, Any]:
    """The non-None ``fields``; raises :class:`InputError` naming a key that is not one of :data:`RUN_FIELDS`."""
    fields = {k: v for k, v in (fields or {}).items() if v is not None}
    unknown = sorted(set(fields) - set(RUN_FIELDS))
    if unknown:
        raise InputError(f"run_fields {', '.join(unknown)}: a caller may set only {', '.join(RUN_FIELDS)}")
    return fields


def ingest_file(
    path: str | Path,
    store_root: str | Path | None,
    labels: dict[str, str] | None = None,
    *,
    force: bool = False,
    fp16: str = "ncu",
    run_fields: dict[str, Any] | None = None,
    gpu: str | None = None,
) -> IngestResult:
    """Read ``path`` and publish it as one run. Returns an :class:`IngestResult`.

    ``run_fields``: columns of the ``runs`` row the caller knows better than the file (``rl profile`` gives
    ``command_line`` and ``host``, which an nsys export lacks); any of :data:`RUN_FIELDS`, applied over the reader's
    values before publish (None values are ignored). Labels ``rank``, ``world_size`` and ``job`` also set those
    columns over the file's (:func:`rooflake.ingest.ranks.labelled_rank`). Re-ingesting the same bytes is a no-op
    (status ``exists``) unless ``force``. Raises :class:`InputError` for a field that is not one of
    :data:`RUN_FIELDS` or a bad rank label, other :class:`RooflakeError` subclasses for bad input or an unwritable store; the store is then unchanged.
    """
    if fp16 not in FP16_CONVENTIONS:
        raise InputError(f"unknown FP16 convention {fp16!r} (one of {', '.join(FP16_CONVENTIONS)})")
    extra = _run_fields(run_fields)
    ranked = labelled_rank(labels, path)
    path = Path(path)
    store = Store(store_root)
    detect_format(path)
    with begin(path) as begun:  # (an nsys export's biggest table is read while the file is hashed)
        sha = file_sha256(path)
        run_id = sha[:16]
        if store.has_run(run_id) and not force:
            return IngestResult(str(path), run_id, "exists")
        with _given_gpu(gpu), open_run(path, run_id=run_id, fp16=fp16, begun=begun) as out:
            run = out["run"]
            if gpu is not None and "ops" not in out:  # (with_ops applied it to a reader with recorded ops)
                from rooflake.ingest.ops import apply_given_gpu

                apply_given_gpu(run)
            row = {**run, **extra, **_ingest_fields(path, sha, labels), **ranked}
            tables = _tables(out)
            res = store.publish(run_id, {**tables, "runs": _runs_table(out, row)}, force=force)
    note = run.get("note")
    if run.get("has_kernel_table") is False:
        note = "the export has no kernel table (CUDA trace was off): 0 kernels"
    return IngestResult(
        str(path),
        run_id,
        res.status,
        run["n_kernels"],
        run["n_metrics"],
        run["gpu_name"],
        ranges=out["ranges"].num_rows if "ranges" in out else None,
        note=note,
        warnings=run.get("warnings") or None,
    )


def _given_gpu(gpu: str | None) -> Any:
    """:func:`rooflake.ingest.ops.given_gpu_for` when a GPU is given (the ops module is not imported otherwise)."""
    if gpu is None:
        return contextlib.nullcontext()
    from rooflake.ingest.ops import given_gpu_for

    return given_gpu_for(gpu)


def _ingest_fields(path: Path, sha: str, labels: dict[str, str] | None) -> dict[str, Any]:
    """The ``runs`` columns the ingest itself gives (identity, source, time, labels, versions) for the file ``path``
    of SHA-256 ``sha``."""
    from rooflake.schema import SCHEMA_VERSION  # here: the parent of the ingest workers imports no pyarrow

    return {
        "run_id": sha[:16],
        "source_path": path_text(path.resolve()),
        "source_sha256": sha,
        "source_bytes": source_bytes(path),
        "ingested_at": datetime.now(timezone.utc),
        "labels": sorted((labels or {}).items()),
        "rooflake_version": rooflake_version(),
        "schema_version": SCHEMA_VERSION,
    }


def _tables(out: dict[str, Any]) -> dict[str, pa.Table | DuckTable]:
    """The tables among a reader's outputs (the others are the ``run`` dict and such)."""
    import pyarrow as pa

    return {name: t for name, t in out.items() if isinstance(t, (pa.Table, DuckTable))}


def _reports_in(folder: Path) -> list[Path]:
    """Files under ``folder`` (recursively) a reader recognises by their first bytes, and files that look like
    reports but cannot be read, or are named like a report (:data:`REPORT_SUFFIXES`) and hold something else (kept,
    so that their ingest fails loudly instead of being skipped unseen); a folder that is an nsys parquetdir export
    is one report (its files are not looked at one by one)."""
    from rooflake.ingest.nsys_parquet import is_parquetdir

    folders, files = _tree(folder)
    dirs = [d for d in folders if is_parquetdir(d)]
    found = [d for d in dirs if not any(o in d.parents for o in dirs)]
    for f in [x for x in files if not any(d in x.parents for d in dirs)]:
        try:
            fmt = detect_format(f)
        except UnsupportedFormatError:  # not a report, unless named like one (its ingest then says it is not)
            if f.name.endswith(REPORT_SUFFIXES):
                found.append(f)
            continue
        except InputError:  # unreadable (permissions, I/O), or empty: a report only if named like one
            if f.stat().st_size > 0 or f.name.endswith(REPORT_SUFFIXES):
                found.append(f)
            continue
        if fmt in READABLE:
            found.append(f)
    return found


def _tree(folder: Path) -> tuple[list[Path], list[Path]]:
    """The folders under ``folder`` (itself first, then sorted) and the regular files in them (sorted), following
    symlinked folders, each real folder once (a link back up ends there, a second link to a folder adds nothing).
    Raises :class:`InputError` naming a folder that cannot be listed (no permission, an I/O error)."""

    def refuse(e: OSError) -> None:
        raise InputError(f"{e.filename}: cannot read this folder ({e.strerror or e})") from e

    seen: set[tuple[int, int]] = set()
    folders: list[Path] = []
    files: list[Path] = []
    for top, subdirs, names in os.walk(folder, onerror=refuse, followlinks=True):
        st = os.stat(top)
        if (st.st_dev, st.st_ino) in seen:
            subdirs[:] = []
            continue
        seen.add((st.st_dev, st.st_ino))
        folders.append(Path(top))
        files += [f for f in (Path(top) / n for n in names) if f.is_file()]
    return [folders[0], *sorted(folders[1:])], sorted(files)


def _expand(a: str) -> list[Path]:
    p = Path(a)
    if p.is_dir():
        found = _reports_in(p)
        if not found:
            raise InputError(
                f"{p}: directory holds no file rl ingest reads (found by first bytes): {FORMATS_READ}"
            )
        return found
    if p.exists():
        if not p.is_file():
            raise InputError(f"{p}: not a regular file (a FIFO, socket or device cannot be a report)")
        return [p]
    if _glob.has_magic(a):
        matches = sorted(Path(m) for m in _glob.glob(a, recursive=True) if Path(m).is_file())
        if not matches:
            raise InputError(f"{a}: no file matches this pattern")
        return matches
    raise InputError(f"{a}: no such file or directory")


def expand_paths(args: Iterable[str]) -> list[Path]:
    """Files named by ``args``, each once: files as given, directories recursively (files whose first bytes a
    reader recognises, and unreadable files, whose ingest then fails with the reason), globs expanded. Raises
    :class:`InputError` for a missing path, a glob matching nothing, or a directory holding no reports."""
    seen: set[Path] = set()
    uniq = []
    for p in (p for a in args for p in _expand(a)):
        r = p.resolve()
        if r not in seen:
            seen.add(r)
            uniq.append(p)
    return uniq


def _worker(job: tuple[str, str | None, dict[str, str], bool, str, str | None]) -> IngestResult:
    path, root, labels, force, fp16, gpu = job
    try:
        res = ingest_file(path, root, labels, force=force, fp16=fp16, gpu=gpu)
        res.peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        return res
    except StoreError as e:
        return IngestResult(path, None, "store-error", error=str(e))
    except RooflakeError as e:
        return IngestResult(path, None, "error", error=str(e))
    except Exception as e:  # noqa: BLE001 - a vendor library choking on a corrupt file must not stop the batch
        return IngestResult(path, None, "error", error=f"{path}: cannot read it ({type(e).__name__}: {e})")


def main_script_modules() -> list[str]:
    """The rooflake modules this process's main script imported (``rooflake.cli`` for the ``rl`` console script),
    when the main program is a script file. A worker started by a fork server runs the parent's main script again
    (multiprocessing's ``prepare``; preloading ``__main__`` does not help on Python 3.11, whose fork server drops
    the script's path): 40 ms of imports per report unless the server imported them first."""
    main = sys.modules.get("__main__")
    if main is None or getattr(main, "__spec__", None) is not None or not getattr(main, "__file__", None):
        return []
    found = {getattr(v, "__module__", None) for v in vars(main).values() if callable(v)}
    return sorted(m for m in found if isinstance(m, str) and m.split(".")[0] == "rooflake")


def ingest_paths(
    paths: list[Path],
    store_root: str | Path | None,
    labels: dict[str, str] | None = None,
    *,
    force: bool = False,
    fp16: str = "ncu",
    workers: int | None = None,
    progress: Callable[[IngestResult], None] | None = None,
    gpu: str | None = None,
) -> Iterator[IngestResult]:
    """Ingest each path; yields one :class:`IngestResult` per file (status ``error`` with the message for a bad
    file: the others still go in). One file is read in this process (in a child if this process has read a
    report before); several in ``workers`` processes (default: every core), a fresh one per report, largest
    file first (the longest reads do not end the batch on one busy core). A :class:`StoreError` (unwritable
    store) is raised, not yielded; a :class:`WorkerError` when worker processes cannot start. ``gpu``: as
    :func:`ingest_file`'s, for every file."""
    store = Store(store_root)
    if paths:
        store.check_writable()
        store.clean_staging()
    root = str(store.root)
    jobs = [(str(p), root, dict(labels or {}), force, fp16, gpu) for p in paths]
    n = workers or os.cpu_count() or 1
    if len(jobs) == 1:  # the common `rl ingest FILE`: no pool (read() isolates a second ncu report itself)
        r = _worker(jobs[0])
        if r.status == "store-error":
            raise StoreError(r.error or "store error")
        yield r
        return
    jobs.sort(key=lambda job: -_size(job[0]))
    ctx = mp_context([*WORKER_PRELOAD, *main_script_modules()])
    results = run_isolated(ctx, _worker, jobs, min(n, len(jobs)), _crashed)
    while True:
        try:
            r = next(results)
        except StopIteration:
            return
        except (OSError, EOFError) as e:  # the fork server or a worker could not start (before any job ran)
            raise WorkerError(
                f"cannot start the worker processes that read the reports ({type(e).__name__}: {e}); check the "
                f"limits on processes and memory and that the temporary folder ($TMPDIR) is writable"
            ) from e
        if r.status == "store-error":
            results.close()  # stops the workers still running
            raise StoreError(r.error or "store error")
        yield r


def _crashed(job: tuple[str, Any, Any, Any, Any], exitcode: int | None) -> IngestResult:
    """The result of a worker process that died without answering (a crash in a vendor library)."""
    how = (
        f"killed by signal {-exitcode}" if exitcode is not None and exitcode < 0 else f"exit code {exitcode}"
    )
    return IngestResult(job[0], None, "error", error=f"{job[0]}: the reading process died ({how})")


def _size(path: str) -> int:
    """Bytes of a file or folder to ingest, 0 when it cannot be read (its worker then reports why)."""
    try:
        return source_bytes(path)
    except OSError:
        return 0
