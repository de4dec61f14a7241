"""The start of the Nsight Systems SQLite reader that needs no run id (:class:`Begun`), begun by
:func:`rooflake.pipeline.ingest_file` before it hashes the file. This module imports nothing heavy: the reader's
modules (pyarrow, DuckDB, ADBC) are imported on the second thread, while the first one hashes."""

from __future__ import annotations

import contextlib
import tempfile
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rooflake.ingest.nsys_sqlite import Loaded

# the smallest export worth beginning before the hash. At the range-heavy copy x8 (720 MB; SHA-256 0.55 s alone,
# 0.74 s beside the second thread) a new run took 0.96x the wall time (10 paired runs), a run the store holds
# 1.34x (1.14 s against 0.84: the hash slowed, the modules imported). Below this size the hash is shorter than the
# second thread's imports (~0.25 s), which a held run would wait for: nothing to win, and that wait to lose
BEGIN_BYTES = 256 << 20


class Begun:
    """The part of :func:`rooflake.ingest.nsys_sqlite.open_export` that needs no run id, begun before the caller
    knows it: on a second thread, the reader's modules are imported, the export is checked
    (:func:`rooflake.ingest.nsys_export.check`) and its biggest source table written to a Parquet file in a new
    temporary folder (:func:`rooflake.ingest.nsys_sqlite.load`), while the caller hashes the file (at the
    range-heavy copy x8, 0.6 s of SHA-256). Leaving it (a context manager) stops the second thread at its next batch,
    waits for it and removes the folder: a run the store holds already costs what that thread did meanwhile (CPU
    time, and the hash's slowing beside it: +0.3 s of wall time at that copy, :data:`BEGIN_BYTES`). Errors of the
    check or the load are raised by :meth:`checked` and by :attr:`loading`'s result, where ``open_export`` raised
    them before."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._folder = tempfile.TemporaryDirectory(prefix="rooflake-duckdb-")
        self.folder = Path(self._folder.name)
        self._stop = threading.Event()
        self._checked: Future[tuple[dict[str, str], str | None]] = Future()
        self._pool = ThreadPoolExecutor(1)
        # the biggest source's file, as load returns it ({} where the export has none of the big tables)
        self.loading: Future[dict[str, Loaded]] = self._pool.submit(self._begin)

    def _begin(self) -> dict[str, Loaded]:
        try:
            from rooflake.ingest import nsys_export, nsys_sqlite

            meta, sizes = nsys_export.check(self.path)
        except BaseException as e:
            self._checked.set_exception(e)
            raise
        biggest = max(sizes, key=lambda n: sizes[n], default=None)
        self._checked.set_result((meta, biggest))
        return nsys_sqlite.load(self.path, [biggest], self.folder, self._stop) if biggest is not None else {}

    def checked(self) -> tuple[dict[str, str], str | None]:
        """The export's metadata and the source being loaded on the second thread (None: none). Raises
        :class:`rooflake.schema.InputError` when the file is not a readable export."""
        return self._checked.result()

    def halt(self) -> None:
        """Stop the second thread (at its next batch) and wait for it."""
        self._stop.set()
        with contextlib.suppress(BaseException):
            self.loading.result()
        self._pool.shutdown()

    def __enter__(self) -> Begun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.halt()
        self._folder.cleanup()
