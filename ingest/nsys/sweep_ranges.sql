-- sweep_ranges: the push/pop ranges of a group of lanes of the NVTX stack sweep, lane by lane in push order
-- (rooflake.ingest.nsys_sweep; needs push_pop and lanes, nsys/ranges.sql).
-- Parameters: $lo, $hi: the group's first and last lane.
-- Columns: (rows by lane, then start, then the later-ending first (never popped: last of all to end), then range_id;
-- each lane's rows as many as lanes.n says)
--   range_id   the range (its event's rowid)
--   start_ns   ns   its push
--   end_ns     ns   its pop; 0 where it is never popped (open)
--   open       1 where it is never popped (no end in the source), else 0 (an integer: numpy takes it without a
--              copy through Arrow's memory pool)
-- (DuckDB returns a result in its ORDER BY only where insertion order is preserved: the reader's setting is false,
-- nsys_sqlite.connect; nsys/sweep_store.sql sets it back)
SET preserve_insertion_order = true;

SELECT r.range_id, r.start_ns, coalesce(r.end_ns, 0) AS end_ns, (r.end_ns IS NULL)::UTINYINT AS open
FROM push_pop AS r
JOIN lanes AS l USING (thread, domain_id)
WHERE l.lane BETWEEN $lo AND $hi
ORDER BY l.lane, r.start_ns, ~coalesce(r.end_ns, 9223372036854775807), r.range_id;
