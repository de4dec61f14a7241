"""Writing output files and directories: one rule for every command that takes ``--out``.

- Missing parent directories are created.
- A file is written atomically: a temporary file in the same directory (mode per umask), fsync, ``os.replace``; a
  reader never sees half a file and a failed write leaves the old file.
- An existing path that is not a regular file or directory (``/dev/stdout``, a FIFO, ``/dev/full``) is written in
  place: it is never replaced.
- A directory (the report) is built beside its final path and renamed into place.
- Every OS failure (missing permission, read-only file system, full disk, a parent that is a file) raises one
  :class:`rooflake.schema.OutputError` naming the path and the reason.
"""

from __future__ import annotations

import os
import shutil
import stat
import uuid
from collections.abc import Callable
from pathlib import Path

from rooflake.schema import OutputError

__all__ = ["output_error", "write_dir", "write_file"]


def output_error(path: Path, e: OSError, what: str = "write") -> OutputError:
    """``OutputError`` "cannot <what> 'PATH': <reason>" (the path quoted: one line whatever its characters)."""
    reason = e.strerror or str(e) or type(e).__name__
    where = (
        f" ({e.filename!r})"
        if e.filename and str(e.filename) != str(path) and ".tmp" not in str(e.filename)
        else ""
    )
    return OutputError(f"cannot {what} {str(path)!r}: {reason}{where}")


def _special(path: Path) -> bool:
    """``path`` exists and is neither a regular file nor a directory (a device, a FIFO, a socket)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _make_parent(path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise output_error(path, e) from e


def write_file(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` by the module's rule; returns the path.

    Raises :class:`OutputError` naming the path when it is a directory or cannot be written."""
    path = Path(path)
    if path.is_dir():
        raise OutputError(f"cannot write {str(path)!r}: it is a directory")
    try:
        if _special(path):
            with open(path, "wb") as f:
                f.write(data)
            return path
    except OSError as e:
        raise output_error(path, e) from e
    _make_parent(path)
    tmp = path.parent / f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        with open(tmp, "xb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise output_error(path, e) from e
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def write_dir(path: str | os.PathLike[str], fill: Callable[[Path], None]) -> Path:
    """Make directory ``path`` by the module's rule: ``fill(tmp)`` writes its content into an empty directory
    beside it, which then replaces ``path`` (an old directory there is removed after the rename).

    Raises :class:`OutputError` naming the path when it exists and is not a directory, or cannot be written;
    whatever ``fill`` raises passes through (the temporary directory is removed)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise OutputError(f"cannot write the directory {str(path)!r}: a file of that name exists")
    _make_parent(path)
    token = uuid.uuid4().hex[:8]
    tmp = path.parent / f".{path.name}.tmp-{token}"
    old = path.parent / f".{path.name}.old-{token}"
    try:
        tmp.mkdir()
        fill(tmp)
        if path.exists():
            os.rename(path, old)
        try:
            os.rename(tmp, path)
        except OSError:
            if old.exists():
                os.rename(old, path)  # put the old directory back
            raise
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise output_error(path, e) from e
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(old, ignore_errors=True)
    return path
