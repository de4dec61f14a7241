"""rooflake.ingest: one reader per profiler format behind one entry point.

:func:`detect_format` looks at a file's first bytes (never its suffix); :func:`read` dispatches to the reader;
:func:`ingest_file` reads one file and publishes it to a store; :func:`ingest_paths` expands files, directories and
globs and ingests them, in worker processes when there are several.

One process reads at most one ``.ncu-rep``: ``ncu_report`` never frees what it read (RSS grows ~6x the bytes) and
carries state from one report into the next (wrong units for some metrics of every later report). Workers come
from a fork server that has already imported ``ncu_report`` and pyarrow, so a fresh process per report costs
milliseconds, and memory stays flat in the number of reports.
"""

from __future__ import annotations

import contextlib
import glob as _glob
import hashlib
import multiprocessing
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa

from rooflake.schema import RUNS, SCHEMA_VERSION, InputError, RooflakeError, UnsupportedFormatError
from rooflake.schema.catalog import FP16_CONVENTIONS

TASKS_PER_WORKER = 1  # see the module docstring: one report per process
_PRELOAD = ["ncu_report", "pyarrow", "pyarrow.parquet", "rooflake.ingest.ncu_rep", "rooflake.store"]


def _mp_context() -> Any:
    """A fork-server context with the readers pre-imported (spawn where fork servers do not exist)."""
    try:
        ctx = multiprocessing.get_context("forkserver")
    except ValueError:  # Windows
        return multiprocessing.get_context("spawn")
    ctx.set_forkserver_preload(_PRELOAD)
    return ctx


# magic bytes -> format name; None = recognised but not readable yet (message says what it is)
MAGICS: list[tuple[bytes, str]] = [
    (b"NVR\x00", "ncu-rep"),
    (b"NVIDIA Tegra Profiler Report", "nsys-rep"),
    (b"SQLite format 3\x00", "sqlite"),
]
READABLE = {"ncu-rep", "sqlite", "nsys-rep"}
NSYS_EXPORT_HINT = "nsys export --type sqlite --output FILE.sqlite FILE.nsys-rep"


def detect_format(path: str | Path) -> str:
    """Format name of ``path`` from its first bytes: ``ncu-rep``, ``nsys-rep`` or ``sqlite``.

    Raises :class:`InputError` for an unreadable or empty file, :class:`UnsupportedFormatError` for unknown bytes.
    """
    path = Path(path)
    if path.exists() and not path.is_file():
        raise InputError(f"{path}: not a regular file" + (" (a directory)" if path.is_dir() else ""))
    try:
        with open(path, "rb") as f:
            head = f.read(64)
    except IsADirectoryError as e:
        raise InputError(f"{path}: is a directory") from e
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror})") from e
    if not head:
        raise InputError(f"{path}: empty file")
    for magic, name in MAGICS:
        if head.startswith(magic):
            return name
    raise UnsupportedFormatError(
        f"{path}: unknown format (first bytes {head[:8]!r}); expected an Nsight Compute report (starts with NVR\\0)"
    )


def file_sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def read(path: str | Path, *, run_id: str, fp16: str = "ncu") -> dict[str, Any]:
    """Read any supported file into ``{"kernels", "metrics", "ceilings", ...: pa.Table, "run": dict}`` (the tables
    its reader gives: ncu reports kernels/metrics/ceilings, nsys exports kernels/memops/ranges/coverage).

    Raises :class:`UnsupportedFormatError` for formats without a reader, :class:`InputError` for bad files.
    """
    from rooflake.store import DuckTable

    with open_run(path, run_id=run_id, fp16=fp16) as out:
        return {k: v.to_arrow() if isinstance(v, DuckTable) else v for k, v in out.items()}


@contextlib.contextmanager
def open_run(path: str | Path, *, run_id: str, fp16: str = "ncu") -> Iterator[dict[str, Any]]:
    """Like :func:`read`, but a table may be a :class:`rooflake.store.DuckTable` (valid inside the ``with``
    block), which :meth:`Store.publish` streams to Parquet without a copy in Python memory (nsys exports)."""
    fmt = detect_format(path)
    if fmt in ("sqlite", "nsys-rep"):
        from rooflake.ingest import nsys_sqlite

        with contextlib.ExitStack() as stack:
            sqlite = Path(path) if fmt == "sqlite" else stack.enter_context(_exported(Path(path)))
            out = stack.enter_context(nsys_sqlite.open_export(sqlite, run_id=run_id))
            if fmt == "nsys-rep":
                out["run"]["source_format"] = "nsys-rep"
            yield out
        return
    from rooflake.ingest import ncu_rep

    if not ncu_rep.loaded_any():
        yield ncu_rep.read(path, run_id=run_id, fp16=fp16)
        return
    # this process has read a report already: read this one in a fresh process (see the module docstring)
    with _mp_context().Pool(1, maxtasksperchild=1) as pool:
        ok, out = pool.apply(_read_child, (str(path), run_id, fp16))
    if not ok:
        raise out
    yield out


@contextlib.contextmanager
def _exported(path: Path) -> Iterator[Path]:
    """Export a ``.nsys-rep`` with the user's own ``nsys`` into a temporary directory; yields the SQLite file.

    Raises :class:`ToolMissingError` without ``nsys`` on PATH, :class:`InputError` when the export fails.
    """
    import shutil
    import subprocess
    import tempfile

    from rooflake.schema import ToolMissingError

    nsys = shutil.which("nsys")
    if nsys is None:
        raise ToolMissingError(
            f"{path}: an Nsight Systems report (.nsys-rep) needs NVIDIA's `nsys` on PATH to export it; install "
            f"Nsight Systems, or export it where nsys is installed and ingest the .sqlite: "
            f"{NSYS_EXPORT_HINT.replace('FILE.nsys-rep', str(path)).replace('FILE', path.stem)}"
        )
    with tempfile.TemporaryDirectory(prefix="rooflake-nsys-") as tmp:
        out = Path(tmp) / "export.sqlite"
        cmd = [
            nsys,
            "export",
            "--type",
            "sqlite",
            "--force-overwrite",
            "true",
            "--output",
            str(out),
            str(path),
        ]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise InputError(f"{path}: `nsys export` failed to run ({e})") from e
        if proc.returncode != 0 or not out.exists():
            msg = " ".join((proc.stderr or proc.stdout or "").split())[:400]
            raise InputError(f"{path}: `nsys export --type sqlite` failed (exit {proc.returncode}): {msg}")
        yield out


def _read_child(path: str, run_id: str, fp16: str) -> tuple[bool, Any]:
    from rooflake.ingest import ncu_rep

    try:
        return True, ncu_rep.read(path, run_id=run_id, fp16=fp16)
    except RooflakeError as e:
        return False, e


@dataclass
class IngestResult:
    """Summary of one ingested file (one line of ``rl ingest`` output)."""

    path: str
    run_id: str | None
    status: str  # ingested | replaced | exists | error
    kernels: int | None = None
    metrics: int | None = None
    gpu_name: str | None = None
    error: str | None = None
    ranges: int | None = None
    note: str | None = None
    peak_rss_mb: float | None = None  # of the process that read the file (a worker, or this process)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _rooflake_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rooflake")
    except PackageNotFoundError:  # running from a source tree
        return "unknown"


def ingest_file(
    path: str | Path,
    store_root: str | Path | None,
    labels: dict[str, str] | None = None,
    *,
    force: bool = False,
    fp16: str = "ncu",
) -> IngestResult:
    """Read ``path`` and publish it as one run. Returns an :class:`IngestResult`.

    Re-ingesting the same bytes is a no-op (status ``exists``) unless ``force``. Raises :class:`RooflakeError`
    subclasses for bad input or an unwritable store; the store is then unchanged.
    """
    from rooflake.store import DuckTable, Store, duck_row

    if fp16 not in FP16_CONVENTIONS:
        raise InputError(f"unknown FP16 convention {fp16!r} (one of {', '.join(FP16_CONVENTIONS)})")
    path = Path(path)
    store = Store(store_root)
    detect_format(path)
    sha = file_sha256(path)
    run_id = sha[:16]
    if store.has_run(run_id) and not force:
        return IngestResult(str(path), run_id, "exists")
    with open_run(path, run_id=run_id, fp16=fp16) as out:
        run = out["run"]
        row = {
            **run,
            "run_id": run_id,
            "source_path": str(path.resolve()),
            "source_sha256": sha,
            "source_bytes": path.stat().st_size,
            "ingested_at": datetime.now(timezone.utc),
            "labels": sorted((labels or {}).items()),
            "rooflake_version": _rooflake_version(),
            "schema_version": SCHEMA_VERSION,
        }
        con = next((t.con for t in out.values() if isinstance(t, DuckTable)), None)
        if con is not None:  # the reader's DuckDB builds the row: no pandas import by pyarrow (see duck_row)
            runs: pa.Table | DuckTable = duck_row(con, RUNS, row)
        else:
            runs = pa.table({f.name: [row.get(f.name)] for f in RUNS}, schema=RUNS)
        tables = {name: t for name, t in out.items() if isinstance(t, (pa.Table, DuckTable))}
        res = store.publish(run_id, {"runs": runs, **tables}, force=force)
    n_ranges = out["ranges"].num_rows if "ranges" in out else None
    note = None
    if run.get("has_kernel_table") is False:
        note = "the export has no kernel table (CUDA trace was off): 0 kernels"
    return IngestResult(
        str(path),
        run_id,
        res.status,
        run["n_kernels"],
        run["n_metrics"],
        run["gpu_name"],
        ranges=n_ranges,
        note=note,
    )


def expand_paths(args: Iterable[str]) -> list[Path]:
    """Files named by ``args``: files as given, directories recursively (files whose first bytes a reader
    recognises), globs expanded. Raises :class:`InputError` for a missing path, a glob matching nothing, or a
    directory holding no reports."""
    out: list[Path] = []
    for a in args:
        p = Path(a)
        if p.is_dir():
            found = []
            for f in sorted(x for x in p.rglob("*") if x.is_file()):
                try:
                    fmt = detect_format(f)
                except RooflakeError:
                    continue
                if fmt in READABLE:
                    found.append(f)
            if not found:
                raise InputError(
                    f"{p}: directory holds no Nsight Compute reports (.ncu-rep, found by first bytes)"
                )
            out.extend(found)
        elif p.exists():
            if not p.is_file():
                raise InputError(f"{p}: not a regular file (a FIFO, socket or device cannot be a report)")
            out.append(p)
        elif _glob.has_magic(a):
            matches = sorted(Path(m) for m in _glob.glob(a, recursive=True) if Path(m).is_file())
            if not matches:
                raise InputError(f"{a}: no file matches this pattern")
            out.extend(matches)
        else:
            raise InputError(f"{a}: no such file or directory")
    seen: set[Path] = set()
    uniq = []
    for p in out:
        r = p.resolve()
        if r not in seen:
            seen.add(r)
            uniq.append(p)
    return uniq


def _worker(job: tuple[str, str | None, dict[str, str], bool, str]) -> IngestResult:
    import resource

    from rooflake.schema import StoreError

    path, root, labels, force, fp16 = job
    try:
        res = ingest_file(path, root, labels, force=force, fp16=fp16)
        res.peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        return res
    except StoreError as e:
        return IngestResult(path, None, "store-error", error=str(e))
    except RooflakeError as e:
        return IngestResult(path, None, "error", error=str(e))
    except Exception as e:  # noqa: BLE001 - a vendor library choking on a corrupt file must not stop the batch
        return IngestResult(path, None, "error", error=f"{path}: cannot read it ({type(e).__name__}: {e})")


def ingest_paths(
    paths: list[Path],
    store_root: str | Path | None,
    labels: dict[str, str] | None = None,
    *,
    force: bool = False,
    fp16: str = "ncu",
    workers: int | None = None,
    progress: Callable[[IngestResult], None] | None = None,
) -> Iterator[IngestResult]:
    """Ingest each path; yields one :class:`IngestResult` per file (status ``error`` with the message for a bad
    file: the others still go in). One file is read in this process (in a child if this process has read a
    report before); several in ``workers`` processes (default: every core), a fresh one per report.
    A :class:`StoreError` (unwritable store) is raised, not yielded."""
    from rooflake.schema import StoreError
    from rooflake.store import Store

    store = Store(store_root)
    if paths:
        store.check_writable()
        store.clean_staging()
    root = str(store.root)
    jobs = [(str(p), root, dict(labels or {}), force, fp16) for p in paths]
    n = workers or os.cpu_count() or 1
    if len(jobs) == 1:  # the common `rl ingest FILE`: no pool (read() isolates a second ncu report itself)
        r = _worker(jobs[0])
        if r.status == "store-error":
            raise StoreError(r.error or "store error")
        yield r
        return
    with _mp_context().Pool(min(n, len(jobs)), maxtasksperchild=TASKS_PER_WORKER) as pool:
        for r in pool.imap_unordered(_worker, jobs):
            if r.status == "store-error":
                pool.terminate()
                raise StoreError(r.error or "store error")
            yield r
