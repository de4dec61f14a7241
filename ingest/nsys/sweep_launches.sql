-- sweep_launches: the launch calls of GPU operations made on the threads of a group of lanes of the NVTX stack sweep
-- (rooflake.ingest.nsys_sweep; needs ops, nsys/launches.sql, and lanes, nsys/ranges.sql).
-- Parameters: $lo, $hi: the group's first and last lane (whole threads).
-- Columns: (rows in no particular order: nsys_sweep sorts them by thread, then uid; under the sweep's small memory
-- limit DuckDB's ORDER BY ran out of memory with 64 threads, where this scan does not)
--   thread   the launching thread (globalTid)
--   uid      the operation (ops.uid)
--   t        ns   its launch call's start
SELECT o.launch_thread AS thread, o.uid, o.launch_start_ns AS t
FROM ops AS o
WHERE o.launch_thread IN (SELECT thread FROM lanes WHERE lane BETWEEN $lo AND $hi) AND o.launch_start_ns IS NOT NULL;
