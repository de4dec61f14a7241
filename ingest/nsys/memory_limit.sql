-- memory_limit: set DuckDB's memory limit (rooflake.ingest.nsys_sweep lowers it while its arrays are in Python
-- memory; rooflake.ingest.nsys_sqlite.attribute sets the reader's own limit again after the sweep).
-- Parameters: $memory_limit (e.g. '300MB').
-- Columns: none (settings only).
SET memory_limit = $memory_limit;
