"""One line per message: what the readers put in an error about a file.

- :func:`shown`: a file name as it is, or quoted like a Python string literal when it holds a character that is not
  printable (a newline would split the line, an escape sequence would colour the terminal).
- :func:`path_text`: a file name as text a table column can hold (bytes that are not UTF-8 written ``\\xNN``).
- :func:`utf8_named`: a name of a file that libraries taking UTF-8 text can open (a link when its own is not UTF-8).
- :func:`first_line`: a driver's message without the query text or the traceback it appends on further lines.
- :func:`captured_stderr`: the native libraries' own stderr (``ncu_report``'s absl/protobuf logging writes to file
  descriptor 2 directly) captured for the duration of a read, so that nothing but rooflake's one line reaches the
  terminal; what they said can go into that line.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO


def shown(path: str | Path) -> str:
    """``path`` for a one-line message: as it is when every character is printable, else its Python ``repr``
    (``'run\\n2.sqlite'``)."""
    s = str(path)
    return s if s.isprintable() else repr(s)


def path_text(path: str | Path) -> str:
    """``path`` as text a table column can hold (valid UTF-8): as it is, or, where the name holds bytes that are not
    UTF-8 (Python keeps them as lone surrogates, which Arrow and DuckDB refuse), with each such byte as ``\\xNN``."""
    s = str(path)
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(s).decode("utf-8", errors="backslashreplace")
    return s


@contextlib.contextmanager
def utf8_named(path: Path, link_name: str) -> Iterator[Path]:
    """A name of the file or folder ``path`` that libraries taking UTF-8 text can open (``ncu_report``'s
    ``char const *``, pyarrow's URIs, DuckDB's SQL text): ``path`` itself, or, when its name holds bytes that are
    not UTF-8 (:func:`path_text` differs), a symbolic link ``link_name`` to it in a temporary folder that lives as
    long as the block (readers such as ``ncu_report`` read from the file after opening it)."""
    if path_text(path) == str(path):
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="rooflake-link-") as tmp:
        link = Path(tmp) / link_name
        link.symlink_to(os.path.abspath(path))
        yield link


def first_line(e: BaseException | str) -> str:
    """The first non-empty line of an exception's message (or of a text); the exception's type name when empty."""
    lines = [ln for ln in str(e).splitlines() if ln.strip()]
    if lines:
        return lines[0].strip()
    return type(e).__name__ if isinstance(e, BaseException) else ""


class Captured:
    """What a native library wrote to file descriptor 2 inside :func:`captured_stderr`."""

    def __init__(self, file: IO[bytes] | None) -> None:
        self.file = file

    def lines(self) -> list[str]:
        """The non-empty lines written so far (absl's own "before InitializeLog" notice left out), each without its
        ``E0000 time pid file:line]`` prefix."""
        if self.file is None:
            return []
        self.file.flush()
        self.file.seek(0)
        text = self.file.read().decode("utf-8", errors="replace")
        out = []
        for line in text.splitlines():
            line = line.strip()
            if line and not line.startswith("WARNING: All log messages before absl::InitializeLog()"):
                out.append(line.split("] ", 1)[1] if "] " in line[:80] else line)
        return out


@contextlib.contextmanager
def captured_stderr() -> Iterator[Captured]:
    """Redirect file descriptor 2 into a temporary file for the block (process-wide: the readers run it in a
    single-threaded section); yields a :class:`Captured`. When fd 2 cannot be duplicated, nothing is captured."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:
        yield Captured(None)
        return
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield Captured(tmp)
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
