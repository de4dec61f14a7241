"""rooflake.schema: table schemas (units in names), the metric catalog and the error classes."""

from typing import TYPE_CHECKING, Any

from rooflake.schema.errors import (
    BadArgument,
    DamagedStoreError,
    InputError,
    OutputError,
    QueryError,
    RooflakeError,
    RooflineDataError,
    RunNotFoundError,
    StoreError,
    ToolMissingError,
    UnsupportedFormatError,
    UsageError,
)

if TYPE_CHECKING:
    from rooflake.schema.tables import (
        CEILINGS,
        COLUMNS,
        COVERAGE,
        DESCRIPTIONS,
        ESTIMATES,
        GRAPH_KERNELS,
        KERNELS,
        MEMOPS,
        METRICS,
        OPS,
        RANGES,
        RUNS,
        SCHEMA_VERSION,
        SERVING_STEPS,
        TABLES,
        Column,
    )

_TABLE_NAMES = frozenset(
    (
        "CEILINGS",
        "COLUMNS",
        "COVERAGE",
        "DESCRIPTIONS",
        "ESTIMATES",
        "KERNELS",
        "MEMOPS",
        "METRICS",
        "GRAPH_KERNELS",
        "OPS",
        "RANGES",
        "RUNS",
        "SCHEMA_VERSION",
        "SERVING_STEPS",
        "TABLES",
        "Column",
    )
)


def __getattr__(name: str) -> Any:
    """The table declarations load on first use: ``rl --help`` imports only the error classes. ``COLUMNS``,
    ``DESCRIPTIONS`` and ``Column`` are plain data; ``TABLES`` and ``RUNS``, ``KERNELS``, ... are pyarrow schemas
    (importing pyarrow)."""
    if name in _TABLE_NAMES:
        from rooflake.schema import tables

        return getattr(tables, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CEILINGS",
    "COLUMNS",
    "COVERAGE",
    "DESCRIPTIONS",
    "ESTIMATES",
    "MEMOPS",
    "RANGES",
    "KERNELS",
    "METRICS",
    "OPS",
    "GRAPH_KERNELS",
    "SERVING_STEPS",
    "RUNS",
    "SCHEMA_VERSION",
    "TABLES",
    "Column",
    "DamagedStoreError",
    "InputError",
    "OutputError",
    "QueryError",
    "RooflakeError",
    "RooflineDataError",
    "RunNotFoundError",
    "StoreError",
    "ToolMissingError",
    "UnsupportedFormatError",
    "UsageError",
    "BadArgument",
]
