"""Building Arrow from Python values without pyarrow importing pandas (:func:`pyarrow_without_pandas`), for the
readers (``rooflake.ingest``: the ncu report reader, the NVTX stack sweep) and the pipeline (the ``runs`` row,
the ingest workers' warm-up)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def pyarrow_without_pandas() -> Iterator[None]:
    """Let pyarrow's one check for pandas, made inside this block, find it absent. Building Arrow from Python lists
    (``pa.table``, ``pa.array``, even of NumPy object arrays) makes pyarrow import pandas where it is installed,
    once per process: 0.6-0.8 s of a report's ingest, and every ingest worker is a fresh process. Nothing
    is lost: pyarrow retries the import for an explicit conversion (``to_pandas()``, ``Table.from_pandas``), and
    ``pa.table`` of a DataFrame still works (through the Arrow C stream). No-op where pandas is already imported."""
    if "pandas" in sys.modules:
        yield
        return
    blocker = _NoPandas()
    sys.meta_path.insert(0, blocker)
    try:
        yield
    finally:
        sys.meta_path.remove(blocker)


class _NoPandas:
    """An import finder that refuses ``pandas`` (:func:`pyarrow_without_pandas`)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"{name} is not used to build Arrow tables", name=name)
