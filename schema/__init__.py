"""rooflake.schema: table schemas (units in names), the metric catalog and the error classes."""

from typing import TYPE_CHECKING, Any

from rooflake.schema.errors import (
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
        COVERAGE,
        ESTIMATES,
        KERNELS,
        MEMOPS,
        METRICS,
        RANGES,
        RUNS,
        SCHEMA_VERSION,
        TABLES,
    )

_TABLE_NAMES = frozenset(
    (
        "CEILINGS",
        "COVERAGE",
        "ESTIMATES",
        "KERNELS",
        "MEMOPS",
        "METRICS",
        "RANGES",
        "RUNS",
        "SCHEMA_VERSION",
        "TABLES",
    )
)


def __getattr__(name: str) -> Any:
    """The table schemas load on first use (they import pyarrow): ``rl --help`` imports only the error classes."""
    if name in _TABLE_NAMES:
        from rooflake.schema import tables

        return getattr(tables, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CEILINGS",
    "COVERAGE",
    "ESTIMATES",
    "MEMOPS",
    "RANGES",
    "KERNELS",
    "METRICS",
    "RUNS",
    "SCHEMA_VERSION",
    "TABLES",
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
]
