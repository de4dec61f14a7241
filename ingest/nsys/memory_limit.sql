-- memory_limit: set DuckDB's memory limit (rooflake.ingest.nsys_sqlite.attribute: the reader's own limit again,
-- after the NVTX stack sweep lowered it, nsys/sweep_lanes.sql).
-- Parameters: $memory_limit (e.g. '300MB').
-- Columns: none (settings only).
SET memory_limit = $memory_limit;
