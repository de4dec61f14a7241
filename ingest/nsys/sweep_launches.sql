-- sweep_launches: the launch calls of GPU operations made on the threads of a group of lanes of the NVTX stack sweep
-- (rooflake.ingest.nsys_sweep; needs ops, nsys/launches.sql, and lanes, nsys/ranges.sql).
-- Parameters: $lo, $hi: the group's first and last lane (whole threads).
-- Columns: (rows by thread, then uid)
--   thread   the launching thread (globalTid)
--   uid      the operation (ops.uid)
--   t        ns   its launch call's start
-- (DuckDB returns a result in its ORDER BY only where insertion order is preserved: the reader's setting is false,
-- nsys_sqlite.connect; nsys/sweep_store.sql sets it back)
SET preserve_insertion_order = true;

SELECT o.launch_thread AS thread, o.uid, o.launch_start_ns AS t
FROM ops AS o
WHERE o.launch_thread IN (SELECT thread FROM lanes WHERE lane BETWEEN $lo AND $hi) AND o.launch_start_ns IS NOT NULL
ORDER BY thread, uid;
