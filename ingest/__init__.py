"""rooflake.ingest: one reader per profiler format behind one entry point.

:func:`detect_format` looks at a file's first bytes (never its suffix); :func:`read` and :func:`open_run`
dispatch to the reader. Publishing to a store is :mod:`rooflake.pipeline`'s job (``ingest_file``,
``ingest_paths``).

One process reads at most one ``.ncu-rep``: ``ncu_report`` never frees what it read (RSS grows ~6x the bytes) and
carries state from one report into the next (wrong units for some metrics of every later report). A second report
is read in a fresh process from a fork server that has already imported ``ncu_report`` and pyarrow
(:func:`mp_context`), so it costs milliseconds, and memory stays flat in the number of reports.
"""

from __future__ import annotations

import contextlib
import hashlib
import multiprocessing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rooflake.ingest.messages import first_line, shown
from rooflake.ingest.registry import BY_NAME, FORMATS_READ, READERS
from rooflake.schema import InputError, RooflakeError, UnsupportedFormatError
from rooflake.schema.duck import DuckTable

PRELOAD = ["ncu_report", "pyarrow", "pyarrow.parquet", "rooflake.ingest.ncu_rep"]


def mp_context(preload: list[str] | None = None) -> Any:
    """A fork-server context whose server pre-imports ``preload`` (default :data:`PRELOAD`, the readers), or a
    spawn context where fork servers do not exist. The preload list counts only before the server's first start."""
    try:
        ctx = multiprocessing.get_context("forkserver")
    except ValueError:  # Windows
        return multiprocessing.get_context("spawn")
    ctx.set_forkserver_preload(preload or PRELOAD)
    return ctx


#: the formats rl ingest reads (rooflake.ingest.registry.READERS: one entry each)
READABLE = frozenset(BY_NAME)
NSYS_EXPORT_HINT = "nsys export --type sqlite --output FILE.sqlite FILE.nsys-rep"


def detect_format(path: str | Path) -> str:
    """Format name of ``path`` from its first bytes (one of :data:`READABLE`): ``ncu-rep``, ``ncu-csv``,
    ``nsys-rep``, ``sqlite``, ``ert-json``, ``measured-json`` or ``torch-trace``; of a folder from its files:
    ``nsys-parquetdir`` (``nsys export --type parquetdir``: ``StringIds.parquet``, ...; one run).

    Raises :class:`InputError` for an unreadable or empty file, :class:`UnsupportedFormatError` for unknown bytes,
    a small file that starts like JSON but is not, and a gzip file cut short before its first bytes show a trace.
    """
    path = Path(path)
    if path.is_dir():
        for reader in (r for r in READERS if r.folder):
            if reader.sniff(path, b""):
                return reader.name
    if path.exists() and not path.is_file():
        raise InputError(f"{shown(path)}: not a regular file" + (" (a directory)" if path.is_dir() else ""))
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 16)  # text formats are sniffed further in (a CSV after tool output)
    except IsADirectoryError as e:
        raise InputError(f"{shown(path)}: is a directory") from e
    except OSError as e:
        raise InputError(f"{shown(path)}: cannot read ({e.strerror})") from e
    if not head:
        raise InputError(f"{shown(path)}: empty file")
    for reader in (r for r in READERS if not r.folder):
        if reader.sniff(path, head):
            return reader.name
    raise UnsupportedFormatError(
        f"{shown(path)}: unknown format (first bytes {head[:8]!r}); rl ingest reads {FORMATS_READ}, each known by "
        "its content, not its name"
    )


def _files(path: Path) -> list[Path]:
    """``path`` itself, or the regular files under the folder ``path`` (recursively) sorted by relative name."""
    return sorted((f for f in path.rglob("*") if f.is_file()), key=lambda f: f.relative_to(path).as_posix())


HASH_CHUNK = 8 << 20


def file_sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes; of a folder (a parquetdir export), of each file's relative name, size and
    bytes in name order (the same files give the same hash wherever the folder lies). Raises :class:`InputError`
    naming ``path`` (and the file of a folder) when one cannot be read."""
    path = Path(path)
    h = hashlib.sha256()
    # 8 MiB read at a time: the GIL is released while each is hashed, and taken again ~90 times a GB (1 MiB: a
    # thread importing modules meanwhile, as an export's begun read does, held it for 5 ms each time)
    buf = bytearray(HASH_CHUNK)
    view = memoryview(buf)
    for file in _files(path) if path.is_dir() else [path]:
        try:
            if file is not path:
                name = file.relative_to(path).as_posix().encode()
                h.update(b"%d:%s:%d:" % (len(name), name, file.stat().st_size))
            with open(file, "rb") as f:
                while n := f.readinto(buf):
                    h.update(view[:n])
        except OSError as e:
            inner = "" if file is path else f"{shown(file.relative_to(path).as_posix())}: "
            raise InputError(f"{shown(path)}: {inner}cannot read ({e.strerror or e})") from e
    return h.hexdigest()


def source_bytes(path: str | Path) -> int:
    """Size of a file in bytes; of a folder (a parquetdir export), of all its files."""
    path = Path(path)
    return sum(f.stat().st_size for f in _files(path)) if path.is_dir() else path.stat().st_size


def read(path: str | Path, *, run_id: str, fp16: str = "ncu") -> dict[str, Any]:
    """Read any supported file into ``{"kernels", "metrics", "ceilings", ...: pa.Table, "run": dict}`` (the tables
    its reader gives: ncu reports kernels/metrics/ceilings, nsys exports kernels/memops/ranges/coverage).

    Raises :class:`UnsupportedFormatError` for formats without a reader, :class:`InputError` for bad files.
    """
    with open_run(path, run_id=run_id, fp16=fp16) as out:
        return {k: v.to_arrow() if isinstance(v, DuckTable) else v for k, v in out.items()}


@contextlib.contextmanager
def begin(path: str | Path) -> Iterator[Any]:
    """Begin reading ``path`` before its run id is known, where its reader can and it pays: an Nsight Systems SQLite
    export of at least :data:`rooflake.ingest.nsys_begin.BEGIN_BYTES` starts writing its biggest table on a second
    thread (:class:`rooflake.ingest.nsys_begin.Begun`) while the caller hashes the file. Yields what
    :func:`open_run` takes as ``begun`` (None for the other files); leaving the block stops what still runs. Raises
    nothing of its own: errors of the file come from :func:`open_run`."""
    from rooflake.ingest import nsys_begin

    try:
        begins = detect_format(path) == "sqlite" and Path(path).stat().st_size >= nsys_begin.BEGIN_BYTES
    except (RooflakeError, OSError):  # open_run says it
        begins = False
    if not begins:
        yield None
        return
    with nsys_begin.Begun(path) as begun:
        yield begun


@contextlib.contextmanager
def open_run(
    path: str | Path, *, run_id: str, fp16: str = "ncu", begun: Any = None
) -> Iterator[dict[str, Any]]:
    """Like :func:`read`, but a table may be a :class:`rooflake.schema.duck.DuckTable` (valid inside the ``with``
    block), which :meth:`Store.publish` streams to Parquet without a copy in Python memory (nsys exports).
    ``begun``: what :func:`begin` yielded for this ``path``, or None."""
    fmt = detect_format(path)
    with BY_NAME[fmt].open(Path(path), run_id, fp16, begun) as out:
        yield out


def read_ncu_rep(path: str | Path, run_id: str, fp16: str) -> dict[str, Any]:
    """Read one ``.ncu-rep``: in this process if it has read none yet, else in a fresh process (see the module
    docstring). Raises as :func:`rooflake.ingest.ncu_rep.read`."""
    from rooflake.ingest import ncu_rep

    if not ncu_rep.loaded_any():
        return ncu_rep.read(path, run_id=run_id, fp16=fp16)
    with mp_context().Pool(1, maxtasksperchild=1) as pool:
        ok, out = pool.apply(_read_child, (str(path), run_id, fp16))
    if not ok:
        raise out
    return out


@contextlib.contextmanager
def exported(path: Path) -> Iterator[Path]:
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
            f"{shown(path)}: an Nsight Systems report (.nsys-rep) needs NVIDIA's `nsys` on PATH to export it; install "
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
            raise InputError(f"{shown(path)}: `nsys export` failed to run ({first_line(e)})") from e
        if proc.returncode != 0 or not out.exists():
            msg = " ".join((proc.stderr or proc.stdout or "").split())[:400]
            raise InputError(
                f"{shown(path)}: `nsys export --type sqlite` failed (exit {proc.returncode}): {msg}"
            )
        yield out


def _read_child(path: str, run_id: str, fp16: str) -> tuple[bool, Any]:
    from rooflake.ingest import ncu_rep

    try:
        return True, ncu_rep.read(path, run_id=run_id, fp16=fp16)
    except RooflakeError as e:
        return False, e
