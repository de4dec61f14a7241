"""rooflake.schema: table schemas (units in names), the metric catalog and the error classes."""

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
