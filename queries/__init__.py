"""rooflake.queries: named SQL questions kept as documented ``*.sql`` files, and the runner that loads them.

Each named query (``queries/<name>.sql``) starts with a ``-- <name>: what it answers`` header, names its parameters
(``-- Parameters: $run_id.``) and gives one comment per output column with its unit (``-- Columns:``). Queries take
no string formatting: they read the store's tables (``runs``, ``kernels``, ``metrics``, ``ceilings``, ``ranges``,
``memops``, ``coverage``) and each other. On a connection from :func:`connect`, a parameter-free query is a view of
the same name and a parameterized one a table macro (``SELECT * FROM time_roofline('RUN_ID', 1000)``); the rules they
share (attainable, bound, precision pick, the NVTX layer label) are macros (``queries/macros/``). The statements the
views of :mod:`rooflake.views` run besides these are in ``queries/steps/``. The runner is :mod:`.runner`.
"""

from __future__ import annotations

from rooflake.queries.runner import (
    Column,
    Query,
    all_names,
    check_regex,
    column_types,
    column_units,
    columns,
    connect,
    dependencies,
    execute,
    fetch,
    header,
    load,
    macros,
    names,
    parameters,
    query,
    run,
    views,
)

__all__ = [
    "Column",
    "Query",
    "all_names",
    "check_regex",
    "column_types",
    "column_units",
    "columns",
    "connect",
    "dependencies",
    "execute",
    "fetch",
    "header",
    "load",
    "macros",
    "names",
    "parameters",
    "query",
    "run",
    "views",
]
