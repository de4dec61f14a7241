-- sweep_lanes: the lanes of the NVTX stack sweep in order, with their push/pop ranges (rooflake.ingest.nsys_sweep
-- groups them by thread; needs lanes, nsys/ranges.sql).
-- Columns:
--   lane     the lane's number (1, 2, ...: by thread, then domain)
--   thread   its thread (globalTid)
--   n        its push/pop ranges
--   last_pos the last position in nvtx_raw of one of them (src_pos)
SELECT lane, thread, n, last_pos FROM lanes ORDER BY lane;
