-- sweep_lanes: the lanes of the NVTX stack sweep in order, with their push/pop ranges (rooflake.ingest.nsys_sweep
-- groups them by thread; needs lanes, nsys/ranges.sql). DuckDB's memory limit is lowered for the sweep, whose
-- arrays are in Python memory (rooflake.ingest.nsys_sqlite.attribute sets its own limit again after).
-- Parameters: $memory_limit (e.g. '100MB').
-- Columns:
--   lane     the lane's number (1, 2, ...: by thread, then domain)
--   thread   its thread (globalTid)
--   n        its push/pop ranges
SET memory_limit = $memory_limit;

SELECT lane, thread, n FROM lanes ORDER BY lane;
