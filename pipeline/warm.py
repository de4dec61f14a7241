"""Imported once, by the fork server of the ingest workers (:data:`rooflake.pipeline.WORKER_PRELOAD`): what every
worker would otherwise do alike is done here, and each worker, a fork of the server, starts with it done.

- The installed rooflake version (:func:`rooflake.pipeline.rooflake_version`): a package-metadata look-up of
  20-35 ms, once per report otherwise.
- pyarrow's one check for pandas, settled as absent (:func:`rooflake.schema.without_pandas.pyarrow_without_pandas`):
  otherwise the first Arrow table built from Python lists in each worker imports pandas where it is installed.

Importing it elsewhere is harmless (both are per-process caches) but buys nothing.
"""

from __future__ import annotations

import pyarrow as pa

from rooflake.pipeline import rooflake_version
from rooflake.schema.without_pandas import pyarrow_without_pandas

rooflake_version()
with pyarrow_without_pandas():
    pa.array([0])
